"""Test doubles shipped with the ports: scripted models, a local OpenAI-compatible server, fixed judges."""

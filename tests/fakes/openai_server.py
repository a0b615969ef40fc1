"""The local OpenAI-compatible test server (re-exported from testkit so the offline demo can use it too).

Run standalone: python -m tests.fakes.openai_server --port N --script file.json
"""

from testkit.openai_server import Entry, FakeOpenAIServer, completion_body, load_script, main

__all__ = ["Entry", "FakeOpenAIServer", "completion_body", "load_script", "main"]

if __name__ == "__main__":
    main()

"""`diagbot`: the one console script (SPEC §13). Each command reads Settings once and goes through build_services."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.bootstrap import ModelNotConfigured, build_services
from core.contracts.release import Outcome
from core.contracts.run import SessionKey, Turn
from core.errors import StoreUnavailable
from core.observability.log_setup import configure_logging
from core.run import RunContext
from core.runtime import event_loop, run_loop
from core.settings import Settings
from core.tools.contract import Tool
from core.tools.registry import current_registry
from entrypoints import schema_commands
from entrypoints.feedback_export import export, since_of
from entrypoints.outcome_text import render_outcome, render_timeline

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (tool options are added per tool at parse time)."""
    parser = argparse.ArgumentParser(prog="diagbot", description="Evidence-gated incident diagnosis bot.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO (default: WARNING)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("serve", help="run the Slack app (Socket Mode with SLACK_APP_TOKEN, else HTTP on $PORT); "
                        "also works queued turns")
    commands.add_parser("worker", help="work queued turns only, beside `diagbot serve` (needs REDIS_URL)")
    check = commands.add_parser("check", help="validate every setting and probe every dependency, one line each")
    check.add_argument("--model", action="store_true",
                       help="also probe what the model endpoint supports (tools, tool results, content:null, JSON)")
    ask = commands.add_parser("ask", help="one turn through the pipeline, printed as text")
    ask.add_argument("question")
    ask.add_argument("--thread", default=None, help="session id: turns with the same id are follow-ups")
    demo = commands.add_parser("demo", help="the bundled scenarios, offline with recorded model responses")
    demo.add_argument("--live", action="store_true", help="ask the configured model endpoint instead")
    trace = commands.add_parser("trace", help="a run's timeline")
    trace.add_argument("run_id")
    commands.add_parser("migrate", help="upgrade the database schema (DATABASE_URL) to this version's head")
    purge = commands.add_parser("purge", help="delete timeline, audit, reasoning and run rows older than an age")
    purge.add_argument("--older-than", required=True, metavar="AGE", type=schema_commands.older_than,
                       help="e.g. 30d, 12h, 2w")
    feedback = commands.add_parser("feedback", help="export the 👍/👎 votes on final messages")
    feedback.add_argument("--since", default="7d", help="how far back: 7d, 12h, 2w (default 7d)")
    feedback.add_argument("--format", choices=("csv", "json"), default="csv", dest="fmt")
    tool = commands.add_parser(
        "tool", help="call one tool through the ToolBoundary and print its projection JSON",
        description="Tools: " + ", ".join(s.name for s in current_registry().specs() if s.args_model is not None)
                    + ", and mcp_<server>_<tool> for each allowed MCP tool. Each argument is an option: --service X.",
    )
    tool.add_argument("name", help="tool name")
    evaluate = commands.add_parser(
        "eval", help="a labelled grounding corpus through the EvidenceGuard (block and false-reject rates)"
    )
    evaluate.add_argument("path", help="corpus folder (cases *.jsonl + records.jsonl) or one cases file")
    agent_eval = commands.add_parser(
        "eval-agent", help="incidents with known root causes through the whole pipeline, a table per model")
    agent_eval.add_argument("suite", help="suite folder (one folder per incident, e.g. eval/agent) or one incident")
    agent_eval.add_argument("--live", action="store_true", help="the configured model endpoint answers, not recordings")
    agent_eval.add_argument("--record", metavar="NAME", help="with --live: keep the answers as recordings/NAME.json")
    agent_eval.add_argument("--server", dest="server_label", metavar="TEXT",
                            help="with --record: how the model was served (kept in the recordings)")
    agent_eval.add_argument("--model", dest="only", metavar="NAME", help="replay only this recording (file stem or model)")
    agent_eval.add_argument("--incident", metavar="TEXT", help="only incidents whose folder name contains TEXT")
    agent_eval.add_argument("--no-first-look", dest="first_look", action="store_false",
                            help="with --live: run without the deterministic first look")
    replay = commands.add_parser("replay", help="re-check stored drafts under the current rules file")
    replay.add_argument("run_id", nargs="?", default=None)
    replay.add_argument("--since", metavar="AGE", type=schema_commands.older_than, default=None,
                        help="every draft stored in this period (7d, 12h), summarised")
    return parser


def tool_parser(tool: Tool[Any]) -> argparse.ArgumentParser:
    """Options of one tool, one per property of its JSON schema (values are validated by the boundary, not here)."""
    schema = tool.parameters()
    required = set(schema.get("required") or ())
    parser = argparse.ArgumentParser(prog=f"diagbot tool {tool.name}", description=tool.description)
    for key, prop in (schema.get("properties") or {}).items():
        help_text = str(prop.get("description") or "") if isinstance(prop, dict) else ""
        # The property's own name (SPEC §13: --repo_path) and, for snake_case, the dashed spelling (--repo-path).
        flags = [f"--{key}", *([f"--{key.replace('_', '-')}"] if "_" in key else [])]
        with contextlib.suppress(argparse.ArgumentError):  # two properties that spell alike: the first keeps it
            parser.add_argument(*flags, dest=key, default=None,
                                help=help_text + (" (required)" if key in required else ""))
    return parser


def _types(prop: Any) -> set[str]:
    """The JSON types a schema property allows (its own, and its anyOf/oneOf branches')."""
    if not isinstance(prop, dict):
        return set()
    own = prop.get("type")
    found = set(own) if isinstance(own, list) else {own} if isinstance(own, str) else set()
    for branch in (*prop.get("anyOf", ()), *prop.get("oneOf", ())):
        found |= _types(branch)
    return found


def tool_arguments(schema: dict[str, Any], values: dict[str, str | None]) -> dict[str, Any]:
    """Arguments as the model would send them: integers, numbers and booleans as such when they parse, everything
    else as given (the boundary turns a bad value into an INVALID_ARGUMENTS projection)."""
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for key, raw in values.items():
        if raw is None:
            continue
        types = _types(properties.get(key))
        value: Any = raw
        with contextlib.suppress(ValueError):
            if "integer" in types:
                value = int(raw)
            elif "number" in types:
                value = float(raw)
        if "boolean" in types and raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        if types & {"object", "array"} and raw.lstrip()[:1] in ("{", "["):
            with contextlib.suppress(ValueError):
                value = json.loads(raw)  # an object or list option is written as JSON
        arguments[key] = value
    return arguments


async def _ask(settings: Settings, question: str, thread: str | None) -> int:
    services = await build_services(settings)
    try:
        services.require_model()
        thread_id = thread or f"cli-{uuid.uuid4().hex[:12]}"
        turn = Turn(session=SessionKey(team="cli", channel="terminal", thread_ts=thread_id), text=question,
                    user="cli", message_ts=uuid.uuid4().hex)
        outcome = await services.chat_service.handle(turn)
        print(render_outcome(outcome))
        print(f"thread: {thread_id}")
        return EXIT_FAILED if outcome.outcome is Outcome.FAILURE else EXIT_OK
    finally:
        await services.aclose()


async def _trace(settings: Settings, run_id: str) -> int:
    services = await build_services(settings)
    try:
        run = await services.chat_service.get_run(run_id)
        if run is None:
            print(f"no run {run_id} in {settings.database_url.split('://', 1)[0]} database", file=sys.stderr)
            return EXIT_FAILED
        print(render_timeline(run, await services.chat_service.timeline(run_id)))
        return EXIT_OK
    finally:
        await services.aclose()


async def _tool(settings: Settings, parser: argparse.ArgumentParser, name: str, rest: list[str]) -> int:
    services = await build_services(settings)
    try:
        tool = services.boundary.tools.get(name)
        if tool is None:
            parser.error(f"unknown tool {name!r}; tools: {', '.join(services.boundary.tools)}")
        tool_cli = tool_parser(tool)
        options, unknown = tool_cli.parse_known_args(rest)
        arguments = tool_arguments(tool.parameters(), vars(options))
        arguments.update(_extra_options(tool_cli, unknown))
        run_id = f"cli_{uuid.uuid4().hex}"
        ctx = RunContext(run_id=run_id, session_key=f"cli:{run_id}", query=f"diagbot tool {name}",
                         timeline=services.timeline_for(run_id), budgets=settings.budgets)
        projection = await services.boundary.invoke(ctx, None, name, arguments)
        print(json.dumps(projection, indent=2, ensure_ascii=False))
        return EXIT_FAILED if projection.get("evidence_status") == "ERROR" else EXIT_OK
    finally:
        await services.aclose()


async def _feedback(settings: Settings, since: str, fmt: str) -> int:
    start = since_of(since)  # a bad age is a usage error before anything is opened
    services = await build_services(settings)
    try:
        assert services.feedback is not None  # build_services always builds it
        print(export(await services.feedback.since(start), fmt))
        return EXIT_OK
    finally:
        await services.aclose()


async def _serve(settings: Settings) -> int:
    from bot.serve import EVENTS_ONLY_NEEDS_REDIS, serve  # the Slack adapter, imported only for this command
    from entrypoints.check import preflight

    if not settings.diag_serve_runs and not settings.redis_url:
        print(f"diagbot: {EVENTS_ONLY_NEEDS_REDIS}", file=sys.stderr)
        return EXIT_USAGE
    warnings = await preflight(settings, err=lambda line: print(line, file=sys.stderr))
    if warnings is None:
        return EXIT_USAGE
    await serve(settings, warnings=warnings)
    return EXIT_OK


async def _work(settings: Settings) -> int:
    from bot.worker import NEEDS_REDIS, work  # the Slack adapter, imported only for this command
    from entrypoints.check import preflight

    if not settings.redis_url:
        print(f"diagbot: {NEEDS_REDIS}", file=sys.stderr)
        return EXIT_USAGE
    warnings = await preflight(settings, err=lambda line: print(line, file=sys.stderr), command="worker")
    if warnings is None:
        return EXIT_USAGE
    await work(settings, warnings=warnings)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `diagbot` console script."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "tool":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"diagbot: invalid configuration: {exc.error_count()} problem(s): "
              + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_input=False)),
              file=sys.stderr)
        return EXIT_USAGE
    # A server says what it is doing at INFO (never payloads, prompts or reasoning); one-shot commands stay quiet.
    configure_logging(logging.INFO if args.verbose or args.command in ("serve", "worker") else logging.WARNING,
                      settings.diag_log_format)
    try:
        loop = event_loop(settings.diag_event_loop)
        if args.command in ("serve", "worker"):
            logging.getLogger(__name__).info("event loop: %s", loop)
        return run_loop(_dispatch(parser, args, rest, settings), loop)
    except ModelNotConfigured as exc:
        print(f"diagbot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreUnavailable as exc:  # e.g. DATABASE_URL unreachable at start-up
        print(f"diagbot: {exc}; {exc.fix or 'check the URL and that the server is running'}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:  # a setting our code rejected with a clear message (URLs, backends, bounds)
        print(f"diagbot: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `diagbot tool ... | head`: the reader left; not an error worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


async def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace, rest: list[str], settings: Settings) -> int:
    from entrypoints.demo import run_demo  # the demo pulls in the local fake server; only this command needs it

    if args.command == "ask":
        return await _ask(settings, args.question, args.thread)
    if args.command == "demo":
        return await run_demo(live=args.live, settings=settings)
    if args.command == "trace":
        return await _trace(settings, args.run_id)
    if args.command == "serve":
        return await _serve(settings)
    if args.command == "worker":
        return await _work(settings)
    if args.command == "replay":
        if (args.run_id is None) == (args.since is None):
            parser.error("replay needs a RUN_ID or --since AGE (one of them)")
        from entrypoints.replay_cmd import run_replay

        return await run_replay(settings, args.run_id, args.since)
    if args.command == "eval":
        from core.guard.rules import load_rules
        from entrypoints.eval_cmd import run_eval

        return await run_eval(Path(args.path), load_rules(settings.diag_rules_file))
    if args.command == "eval-agent":
        from entrypoints.eval_agent import run_eval_agent

        return await run_eval_agent(Path(args.suite), live=args.live, settings=settings, record=args.record,
                                    only=args.only, first_look=args.first_look, incident_filter=args.incident,
                                    server_label=args.server_label)
    if args.command == "check":
        from entrypoints.check import check_command

        return await check_command(settings, probe_model=args.model)
    if args.command == "migrate":
        return await schema_commands.migrate(settings)
    if args.command == "purge":
        return await schema_commands.purge(settings, args.older_than)
    if args.command == "feedback":
        return await _feedback(settings, args.since, args.fmt)
    return await _tool(settings, parser, args.name, rest)


def _extra_options(parser: argparse.ArgumentParser, unknown: list[str]) -> dict[str, str]:
    """Options the tool does not know are passed on, so the boundary rejects them with an ERROR projection."""
    extra: dict[str, str] = {}
    pending: str | None = None
    for token in unknown:
        if token.startswith("--"):
            key, eq, value = token[2:].partition("=")
            if eq:
                extra[key.replace("-", "_")] = value
            else:
                pending = key.replace("-", "_")
                extra[pending] = ""
        elif pending is not None:
            extra[pending], pending = token, None
        else:
            parser.error(f"unexpected value {token!r}: every tool argument is an option (--name value)")
    return extra


if __name__ == "__main__":
    sys.exit(main())

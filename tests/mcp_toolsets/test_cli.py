"""`diagbot check` and `diagbot tool mcp_<server>_<tool>` with a real toolsets file, run as an operator would."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.test_cli import clean_env, diagbot
from tests.mcp_servers import mcp_server_binary, own_server


def _toolsets(tmp_path: Path, git_repo: Path) -> Path:
    git = json.dumps([str(mcp_server_binary("git", "mcp-server-git")), "--repository", str(git_repo)])
    odd = json.dumps(own_server("oddities"))
    path = tmp_path / "toolsets.toml"
    path.write_text(f"""
[[mcp]]
name = "git"
command = {git}
tools = ["git_log", "git_show", "git_reset", "git_blame"]

[[mcp]]
name = "odd"
command = {odd}
tools = ["error_rate", "labels"]

[[mcp]]
name = "down"
url = "http://127.0.0.1:9/mcp"
tools = ["x"]
timeout_s = 3
""", encoding="utf-8")
    return path


async def test_check_lists_each_server_its_tools_and_every_problem(tmp_path: Path, git_repo: Path) -> None:
    env = clean_env(tmp_path, DIAG_TOOLSETS_FILE=str(_toolsets(tmp_path, git_repo)))
    _, out, err = await diagbot(env, "check")
    text = out + err
    lines = {line.split(":")[0].split()[-1]: line for line in text.splitlines() if " tool.mcp." in line or "toolsets." in line}
    assert "3 MCP servers (git, odd, down)" in lines["toolsets.file"]
    assert "offers mcp_git_git_log, mcp_git_git_show" in lines["tool.mcp.git"]
    assert "'git_reset' declares destructiveHint: true" in lines["tool.mcp.git"]
    assert "'git_blame' is not offered by the server" in lines["tool.mcp.git"]
    assert lines["tool.mcp.odd"].startswith("ok")
    assert "offers mcp_odd_error_rate, mcp_odd_labels" in lines["tool.mcp.odd"]
    assert lines["tool.mcp.down"].startswith("warning")
    assert "not available" in lines["tool.mcp.down"]


async def test_an_invalid_toolsets_file_is_fatal(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[mcp]]\nname = "Bad"\nurl = "http://h/mcp"\nheaders = { A = "${NOT_SET_ANYWHERE}" }\ntools = ["x"]\n')
    code, out, err = await diagbot(clean_env(tmp_path, DIAG_TOOLSETS_FILE=str(bad)), "check")
    assert code != 0
    line = next(line for line in (out + err).splitlines() if "toolsets.file" in line)
    assert line.startswith("FATAL")
    assert "NOT_SET_ANYWHERE" in line
    assert "must match [a-z][a-z0-9]{0,15}" in line


async def test_tool_calls_an_mcp_tool_with_options_from_its_input_schema(tmp_path: Path, git_repo: Path) -> None:
    env = clean_env(tmp_path, DIAG_TOOLSETS_FILE=str(_toolsets(tmp_path, git_repo)))
    code, out, err = await diagbot(env, "tool", "mcp_git_git_log", "--repo_path", str(git_repo), "--max_count", "1")
    assert code == 0, err
    projection = json.loads(out)
    assert projection["tool_name"] == "mcp_git_git_log"
    assert projection["evidence_status"] == "EVIDENCE_FOUND"
    text = json.dumps(projection["content"])
    assert "maximumPoolSize from 40 to 10" in text
    assert "bump HikariCP" not in text  # max_count 1 was sent as the integer 1
    code, out, _ = await diagbot(env, "tool", "mcp_odd_labels", "--match", '{"service": "checkout-api"}')
    assert code == 0
    assert json.loads(out)["content"][0]["json"]["matched"] == 1  # an object option is sent as JSON
    code, out, _ = await diagbot(env, "tool", "mcp_git_git_log", "--max_count", "many")
    assert code != 0
    assert json.loads(out)["error"]["code"] == "INVALID_ARGUMENTS"

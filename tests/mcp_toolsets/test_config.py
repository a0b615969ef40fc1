"""DIAG_TOOLSETS_FILE: the SPEC §3.2 format is accepted as written; every mistake is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.tools.mcp.config import ToolsetsFileError, load_toolsets, parse_toolsets

SPEC_EXAMPLE = '''
[[mcp]]
name = "prom"                               # [a-z][a-z0-9]{0,15}; the agent sees mcp_prom_<tool>
command = ["prometheus-mcp-server"]         # stdio transport, or: url = "http://host:8080/mcp"
env = { PROMETHEUS_URL = "http://prometheus:9090" }          # for command servers
tools = ["execute_query", "execute_range_query"]  # the allow-list: required; nothing else is offered
timeout_s = 15
max_output_bytes = 98304

[[mcp]]
name = "grafana"
url = "http://grafana-mcp:8000/mcp"
headers = { Authorization = "Bearer ${PROM_MCP_TOKEN}" }     # ${VAR} is read from the environment
tools = ["query_prometheus"]
'''


def problems_of(text: str, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ToolsetsFileError) as failure:
        parse_toolsets(text, Path("toolsets.toml"), environ or {})
    return failure.value.problems


def test_the_spec_example_loads() -> None:
    parsed = parse_toolsets(SPEC_EXAMPLE, Path("t.toml"), {"PROM_MCP_TOKEN": "tok-123"})
    prom, grafana = parsed.mcp
    assert prom.command == ("prometheus-mcp-server",)
    assert prom.transport == "stdio"
    assert prom.env == {"PROMETHEUS_URL": "http://prometheus:9090"}
    assert prom.tools == ("execute_query", "execute_range_query")
    assert prom.timeout_s == 15
    assert prom.max_output_bytes == 98304
    assert grafana.headers == {"Authorization": "Bearer tok-123"}
    assert grafana.transport == "http"
    assert grafana.timeout_s == 15
    assert grafana.max_output_bytes == 96 * 1024


def test_a_missing_variable_names_it_and_never_a_value() -> None:
    problems = problems_of(SPEC_EXAMPLE, {"OTHER": "x"})
    assert problems == ["mcp[1] (grafana) headers.Authorization uses ${PROM_MCP_TOKEN} but the environment has no "
                        "PROM_MCP_TOKEN: export it or remove it"]


@pytest.mark.parametrize(("table", "expected"), [
    ('name = "Prom"\ncommand = ["x"]\ntools = ["a"]', "mcp[0] (Prom) name: 'Prom' must match [a-z][a-z0-9]{0,15}"),
    ('name = "averyveryverylongname"\ncommand = ["x"]\ntools = ["a"]', "must match [a-z][a-z0-9]{0,15}"),
    ('name = "p_1"\ncommand = ["x"]\ntools = ["a"]', "must match"),
    ('name = "p"\ncommand = ["x"]', "mcp[0] (p) tools: is required: the allow-list of tools the agent may call"),
    ('name = "p"\ncommand = ["x"]\ntools = []', "the allow-list is empty"),
    ('name = "p"\ncommand = ["x"]\ntools = ["a", "a"]', "'a' is listed twice"),
    ('name = "p"\ntools = ["a"]', "set exactly one of command (a stdio server) or url"),
    ('name = "p"\ncommand = ["x"]\nurl = "http://h/mcp"\ntools = ["a"]', "set exactly one of command"),
    ('name = "p"\ncommand = []\ntools = ["a"]', "command: must be a non-empty list"),
    ('name = "p"\nurl = "ftp://h/mcp"\ntools = ["a"]', "must be an http:// or https:// URL"),
    ('name = "p"\nurl = "http://u:pw@h/mcp"\ntools = ["a"]', "must not carry credentials"),
    ('name = "p"\nurl = "http://h/mcp"\nenv = {A = "b"}\ntools = ["a"]', "env is for command servers"),
    ('name = "p"\ncommand = ["x"]\nheaders = {A = "b"}\ntools = ["a"]', "headers are for url servers"),
    ('name = "p"\ncommand = ["x"]\ntools = ["a"]\ntimeout_s = 0', "timeout_s: Input should be greater than 0"),
    ('name = "p"\ncommand = ["x"]\ntools = ["a"]\nmax_output_bytes = 10', "max_output_bytes: Input should be greater"),
    ('name = "p"\ncommand = ["x"]\ntools = ["a"]\ntimeout = 3', "timeout: is not a known field"),
    ('name = "p"\ncommand = ["x"]\ntools = ["a.b/c"]', "is not a valid function name"),
])
def test_each_mistake_is_one_clear_line(table: str, expected: str) -> None:
    problems = problems_of(f"[[mcp]]\n{table}\n")
    assert len(problems) == 1, problems
    assert expected in problems[0], problems


def test_every_problem_of_the_file_is_listed_at_once() -> None:
    text = ('other = 1\n[[mcp]]\nname = "a"\ncommand = ["x"]\ntools = ["t"]\n'
            '[[mcp]]\nname = "a"\nurl = "http://h/mcp"\ntools = ["t"]\n'
            '[[mcp]]\nname = "B"\ncommand = ["x"]\ntools = ["t"]\n'
            '[[mcp]]\nname = "c"\ntools = ["t"]\n')
    problems = problems_of(text)
    assert any("unknown top-level keys other" in p for p in problems)
    assert any("'a' is used twice" in p for p in problems)
    assert any("mcp[2] (B) name" in p for p in problems)
    assert any("mcp[3] (c): set exactly one of command" in p for p in problems)
    assert len(problems) == 4


def test_syntax_and_file_errors(tmp_path: Path) -> None:
    assert problems_of("[[mcp]\n")[0].startswith("not valid TOML")
    assert problems_of('mcp = "x"\n') == ["mcp must be an array of tables: write each server as [[mcp]]"]
    with pytest.raises(ToolsetsFileError, match="no such file"):
        load_toolsets(tmp_path / "absent.toml")
    big = tmp_path / "big.toml"
    big.write_text("#" * 300_000)
    with pytest.raises(ToolsetsFileError, match="at most 256 KiB"):
        load_toolsets(big)


def test_the_url_shown_in_check_lines_has_no_query_or_secret() -> None:
    parsed = parse_toolsets('[[mcp]]\nname = "g"\nurl = "https://g.example/mcp?token=abc"\ntools = ["t"]\n',
                            Path("t.toml"), {})
    assert parsed.mcp[0].where == "https://g.example/mcp"


def test_variables_in_env_values_are_read_from_the_environment() -> None:
    text = ('[[mcp]]\nname = "g"\ncommand = ["mcp-grafana"]\n'
            'env = { TOKEN = "${VIEWER_TOKEN}", URL = "https://g" }\ntools = ["t"]\n')
    parsed = parse_toolsets(text, Path("t.toml"), {"VIEWER_TOKEN": "glsa_abc"})
    assert parsed.mcp[0].env == {"TOKEN": "glsa_abc", "URL": "https://g"}
    assert problems_of(text) == ["mcp[0] (g) env.TOKEN uses ${VIEWER_TOKEN} but the environment has no VIEWER_TOKEN: "
                                 "export it or remove it"]

"""The samples of README.md, the getting-started page, the handler pages, and the flow-control,
events and workflows pages work as a newcomer pastes them.

A fenced block preceded by the line `<!-- run -->` is part of its page's script. All of a page's
marked blocks run in order, in a fresh directory holding a link to examples/, beside a live
`jobwire dev` node (its sample handler `echo` registered): shell blocks in one bash process (so
variables carry over), an untitled Python block through `python` at its place, and a Python block
titled `NAME.py` written to that file for a shell block to run. `--8<-- "path"` lines are the
files they include, as on the built page. The node listens where the pages say, 127.0.0.1:8000,
save for the port, which is a free one here.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PAGES = ["README.md", "docs/getting-started.md", "docs/guides/handler-python.md", "docs/guides/handler-http.md",
         "docs/guides/flow-control.md", "docs/guides/events.md", "docs/guides/workflows.md"]

MARKED = re.compile(r"^<!-- run -->\n```(?P<lang>\w+)(?P<info>[^\n]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
TITLE = re.compile(r'title="(?P<title>[^"]+)"')
SNIPPET = re.compile(r'^[ \t]*--8<--[ \t]+"(?P<path>[^"]+)"[ \t]*$', re.M)
PAGE_PORT = "127.0.0.1:8000"


@dataclass
class Script:
    files: dict[str, str] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)

    def bash(self) -> str:
        return "\n".join(self.steps)


def script_of(markdown: str, port: int) -> Script:
    """A page's marked blocks as the files to write and the bash script to run, on `port`."""
    script = Script()
    for block in MARKED.finditer(markdown):
        body = SNIPPET.sub(lambda m: (ROOT / m["path"]).read_text().rstrip("\n"), block["body"])
        body = body.replace(PAGE_PORT, f"127.0.0.1:{port}")
        title = TITLE.search(block["info"])
        if block["lang"] == "python" and title:
            script.files[title["title"]] = body
        elif block["lang"] == "python":
            script.steps.append(f"python - <<'JOBWIRE_SAMPLE'\n{body}JOBWIRE_SAMPLE")
        elif block["lang"] in ("sh", "bash", "console"):
            script.steps.append(body)
        else:
            raise AssertionError(f"a marked {block['lang']} block: only sh and python blocks run")
    return script


def test_marked_blocks_become_files_and_steps_in_page_order() -> None:
    page = "\n".join([
        "Text.", "<!-- run -->", '```python title="hello.py"', "print('hi')", "```",
        "<!-- run -->", "```sh", "x=$(curl -s http://127.0.0.1:8000/healthz)", "```",
        "```sh", "not marked", "```",
        "<!-- run -->", "```python", "print(1)", "```",
    ])
    script = script_of(page, 4321)
    assert script.files == {"hello.py": "print('hi')\n"}
    assert script.steps == ["x=$(curl -s http://127.0.0.1:4321/healthz)\n",
                            "python - <<'JOBWIRE_SAMPLE'\nprint(1)\nJOBWIRE_SAMPLE"]


def test_the_readme_shows_the_node_subscriber_its_test_runs() -> None:
    """README.md cannot include a file, so it holds a copy of examples/node-subscriber/server.js
    (tests/sdk/test_node_subscriber.py runs that file against a real node): the same, byte for byte."""
    shown = re.search(r'^```js title="examples/node-subscriber/server.js"\n(?P<body>.*?)^```[ \t]*$',
                      (ROOT / "README.md").read_text(), re.M | re.S)
    assert shown is not None, "README.md: no block titled examples/node-subscriber/server.js"
    assert shown["body"] == (ROOT / "examples" / "node-subscriber" / "server.js").read_text()


@pytest.fixture(scope="module")
def dev_node(tmp_path_factory: pytest.TempPathFactory):
    """`jobwire dev` on a fresh embedded database, once its sample handler is registered."""
    workdir = tmp_path_factory.mktemp("dev")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_") and k != "XDG_RUNTIME_DIR"}
    log = workdir / "dev.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(BIN / "jobwire"), "dev", "--port", str(port)], cwd=workdir, env=env,
                                   stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"jobwire dev did not register echo:\n{log.read_text()}"
            try:
                if httpx.get(f"{url}/v1/handlers/echo").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        yield port, log
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.cluster
@pytest.mark.parametrize("page", PAGES)
def test_the_pages_samples_run_against_a_live_node(page: str, dev_node, tmp_path: Path) -> None:
    port, log = dev_node
    script = script_of((ROOT / page).read_text(), port)
    assert script.steps, f"{page}: no marked sample (a line `<!-- run -->` before its fence)"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for name, text in script.files.items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", JOBWIRE_URL=f"http://127.0.0.1:{port}")
    output = tmp_path / "output.txt"  # a file, not a pipe: a handler left in the background keeps a pipe open
    with output.open("wb") as out:
        # Each command the samples ran is traced to trace.txt (not to the output: a failure shows where it stood).
        traced = "exec 9>trace.txt\nBASH_XTRACEFD=9\nset -x\n" + script.bash()
        shell = subprocess.Popen(["bash", "-euo", "pipefail", "-c", traced], cwd=tmp_path, env=env,
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    try:
        shell.wait(timeout=180)
    except subprocess.TimeoutExpired:
        timed_out = True  # said below with what the samples printed and the node's log
    finally:
        try:  # every background process the samples started (a handler with `&`)
            os.killpg(shell.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if shell.poll() is None:
            shell.wait()
    trace = tmp_path / "trace.txt"
    assert shell.returncode == 0 and not timed_out, (
        f"{page}: the samples {'did not end within 180 s' if timed_out else 'failed'}:\n{output.read_text()}\n"
        f"--- the last commands ---\n{trace.read_text()[-2000:] if trace.exists() else ''}\n"
        f"--- jobwire dev ---\n{log.read_text()[-3000:]}")

"""Inside a real Jupyter kernel: run_sync in a cell, and a kernel interrupt during a blocking call."""

from __future__ import annotations

import ast
import time

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(90)]


def test_run_sync_in_a_notebook_cell() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import sagents_nb as sn\n"
            "result = sn.Agent('a').run_sync('hi', llm=sn.script('hello from a kernel'))\n"
            "print(result.status, result.text)"
        ),
        nbformat.v4.new_code_cell(
            "session = sn.Session(sn.Agent('a'), llm=sn.script('one', 'two'))\n"
            "print(session.send('x').result().text, session.send('y').result().text)"
        ),
    ]
    NotebookClient(nb, kernel_name="python3", timeout=60).execute()
    outputs = ["".join(o.get("text", "") for o in cell.outputs) for cell in nb.cells]
    assert outputs == ["done hello from a kernel\n", "one two\n"]


def test_kernel_interrupt_stops_a_blocking_run_and_the_kernel_stays_usable() -> None:
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        client.execute_interactive(
            "import asyncio, sagents_nb as sn\n"
            "async def slow(req):\n"
            "    await asyncio.sleep(60)\n"
            "    return 'late'\n",
            timeout=30,
        )
        msg_id = client.execute("r = sn.Agent('a').run_sync('x', llm=sn.mock_llm(slow))")
        time.sleep(1.5)
        started = time.monotonic()
        manager.interrupt_kernel()
        reply = client.get_shell_msg(timeout=20)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = client.get_shell_msg(timeout=20)
        # not a speed check: the run stopped long before its model call (60 s) would have ended
        assert time.monotonic() - started < 20
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        still = "sn.Agent('a').run_sync('y', llm=sn.script('still fine')).text"
        assert _printed(client, f"pass\n{still}") == "still fine"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _interrupt_cell(manager, client, code: str) -> dict:
    """Run `code`, which prints `ready` just before its blocking call, and interrupt it there."""
    msg_id = client.execute(code)
    while True:
        message = client.get_iopub_msg(timeout=20)
        if message["parent_header"].get("msg_id") == msg_id and "ready" in message["content"].get(
            "text", ""
        ):
            break
    time.sleep(1.0)  # inside the run's slow tool call (3 s), well before its end
    manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=20)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=20)
    return reply["content"]


def _printed(client, code: str) -> str:
    """What `code` prints, read from the execute reply (the shell channel is ordered; output
    on iopub can come late on a loaded machine): the code's last line is an expression."""
    *body, last = code.splitlines()
    for _ in range(10):  # a request that reaches the kernel just after an error is aborted
        msg_id = client.execute("\n".join(body), user_expressions={"out": last})
        reply = client.get_shell_msg(timeout=60)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = client.get_shell_msg(timeout=60)
        content = reply["content"]
        if content["status"] != "aborted":
            break
        time.sleep(0.5)
    if content["status"] != "ok":
        return f"{content['ename']}: {content['evalue']}"
    out = content["user_expressions"]["out"]
    if out["status"] != "ok":
        return f"{out['ename']}: {out['evalue']}"
    return ast.literal_eval(out["data"]["text/plain"])


def test_kernel_interrupt_cancels_run_sync_and_run_wait_but_not_a_background_result() -> None:
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        client.execute_interactive(
            "import asyncio, time, sagents_nb as sn\n"
            "finished = []\n"
            "@sn.tool\n"
            "async def slow() -> str:\n"
            "    await asyncio.sleep(3)\n"
            "    finished.append('slow')\n"
            "    return 'slow done'\n"
            "def handler(req):\n"
            "    return sn.reply(tool_calls=[sn.call('slow')]) if not req.tool_results else 'end'\n"
            "def fresh():\n"
            "    finished.clear()\n"
            "    return sn.mock_llm(handler)\n",
            timeout=30,
        )
        reply = _interrupt_cell(
            manager,
            client,
            "llm = fresh()\nprint('ready')\nsn.Agent('a', tools=[slow]).run_sync('x', llm=llm)",
        )
        assert reply["ename"] == "KeyboardInterrupt"
        assert _printed(client, "time.sleep(4)\nf'{finished} {len(llm.exchanges)}'") == "[] 1"

        reply = _interrupt_cell(
            manager,
            client,
            "llm = fresh()\n"
            "session = sn.Session(sn.Agent('a', tools=[slow]), llm=llm)\n"
            "run = session.send('x')\n"
            "print('ready')\n"
            "run.wait()",
        )
        assert reply["ename"] == "KeyboardInterrupt"
        assert (
            _printed(
                client,
                "time.sleep(4)\n"
                "' '.join(map(str, [run.status, finished, len(llm.exchanges), "
                "session.llm_messages[-1].content.startswith('[cancelled]')]))",
            )
            == "cancelled [] 1 True"
        )

        reply = _interrupt_cell(
            manager,
            client,
            "llm = fresh()\n"
            "session = sn.Session(sn.Agent('a', tools=[slow]), llm=llm)\n"
            "run = session.send('x')\n"
            "print('ready')\n"
            "run.result()",
        )
        assert reply["ename"] == "KeyboardInterrupt"
        assert (
            _printed(client, "status = run.status\nf'{status} {run.result(timeout=10).text}'")
            == "running end"
        )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

"""The Inspect AI peer of `sweep_scale.py`: the same one-turn mocked items as an Inspect eval.

Run in Inspect's own venv (`benchmarks/.envs/inspect`, built by `run.py`): a `Task` of N samples
("question i"), the solver `generate()` and no scorer, on Inspect's `mockllm/model` answering
"42"; the eval log goes to a temporary folder (Inspect's own record of the samples, as the
SQLite store is sagents_nb's). The mock's outputs carry their token usage, so Inspect never
counts tokens with tiktoken (whose encoding it would download). Prints one JSON line:

    benchmarks/.envs/inspect/bin/python benchmarks/peer_inspect.py --items 1000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import MARK, peak_rss_mb, rss_mb


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
            os.environ[name] = str(home / name.lower())
        os.chdir(folder)  # no .env of the checkout is read
        print(MARK + json.dumps(measure(args.items, home / "logs")), flush=True)


def measure(items: int, log_dir: Path) -> dict[str, object]:
    import inspect_ai
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    def answer(*_: object) -> ModelOutput:
        output = ModelOutput.from_content(model="mockllm/model", content="42")
        output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
        return output

    before = rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    task = Task(
        dataset=[Sample(input=f"question {i}", target="42") for i in range(items)],
        solver=generate(),
    )
    model = get_model("mockllm/model", custom_outputs=answer)
    (log,) = eval(task, model=model, log_dir=str(log_dir), display="none")
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    samples = log.samples or []
    answers = [s.output.completion for s in samples]
    return {
        "version": inspect_ai.__version__,
        "python": sys.version.split()[0],
        "items": items,
        "status": log.status,
        "done": sum(a == "42" for a in answers),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_growth_mb": round(peak_rss_mb() - before, 1),
        "log_mb": round(sum(f.stat().st_size for f in log_dir.rglob("*") if f.is_file()) / 1e6, 2),
    }


if __name__ == "__main__":
    main()

"""Whole-request deadlines: one shared timer, a timeout only for our own cancel."""

from __future__ import annotations

import asyncio

import pytest

from sagents_nb._endpoints.deadline import Deadlines

pytestmark = pytest.mark.timeout(30)


def test_a_block_past_its_deadline_raises_timeout_and_others_go_on() -> None:
    async def main() -> list[str]:
        deadlines = Deadlines(asyncio.get_running_loop())
        now = deadlines.loop.time()

        async def block(when: float, work: float) -> str:
            try:
                async with deadlines.at(now + when):
                    await asyncio.sleep(work)
            except TimeoutError:
                return "timed out"
            return "done"

        results = await asyncio.gather(block(0.05, 10), block(10, 0.1), block(0.1, 10))
        assert deadlines.active == set()
        return results

    assert asyncio.run(main()) == ["timed out", "done", "timed out"]


def test_many_sequential_blocks_share_one_timer() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(loop)
        for _ in range(100):
            async with deadlines.at(loop.time() + 60):
                await asyncio.sleep(0)
        first = deadlines.handle
        assert first is not None and deadlines.active == set()
        async with deadlines.at(loop.time() + 60):
            assert deadlines.handle is first

    asyncio.run(main())


def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(loop)

        async def guarded() -> None:
            async with deadlines.at(loop.time() + 60):
                await asyncio.sleep(10)

        task = asyncio.create_task(guarded())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert deadlines.active == set()

    asyncio.run(main())


def test_a_closed_endpoint_leaves_no_timer_on_the_loop() -> None:
    """A sweep closes each run's own endpoint: the timers of 10,000 runs used to stay on the
    library's loop until their deadlines, 300 s later."""
    import sagents_nb as sn

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for _ in range(20):
            llm = sn.mock_llm(lambda request: "ok")
            await llm.complete({"model": "m", "messages": [{"role": "user", "content": "à 東京"}]})
            await llm.aclose()
        return sum(not handle.cancelled() for handle in loop._scheduled)  # type: ignore[attr-defined]

    assert asyncio.run(main()) == 0

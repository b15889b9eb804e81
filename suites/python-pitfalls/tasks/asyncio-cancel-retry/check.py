import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncio

from solution import retry


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Boom(Exception):
    pass


async def ordinary():
    log = []

    async def ok():
        return 7

    r = await asyncio.wait_for(retry(ok, 3, 0.001, log.append), 1)
    if r != 7:
        fail("retry(ok) returned %r, expected 7" % (r,))
    if log:
        fail("retry logged %r for a successful first attempt" % (log,))

    calls = []

    async def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise Boom("try %d" % len(calls))
        return "done"

    log = []
    r = await asyncio.wait_for(retry(flaky, 3, 0.001, log.append), 1)
    if r != "done" or len(calls) != 3:
        fail("retry(flaky) returned %r after %d calls, expected 'done' after 3" % (r, len(calls)))
    if len(log) != 2 or not log[0].startswith("attempt 1 failed") or not log[1].startswith("attempt 2 failed"):
        fail("unexpected log for two failures: %r" % (log,))

    errors = []

    async def always():
        e = Boom("n%d" % len(errors))
        errors.append(e)
        raise e

    log = []
    try:
        await asyncio.wait_for(retry(always, 3, 0.001, log.append), 1)
    except Boom as e:
        if len(errors) != 3 or e is not errors[-1]:
            fail("after 3 failed attempts expected the last exception, got %r (calls=%d)" % (e, len(errors)))
    except asyncio.TimeoutError:
        fail("retry(always-failing, 3 attempts, delay=0.001) did not finish within 1 s")
    else:
        fail("retry did not raise after all attempts failed")
    if len(log) != 3:
        fail("expected 3 log lines for 3 failed attempts, got %r" % (log,))

    # No sleep after the final attempt.
    errors.clear()
    try:
        await asyncio.wait_for(retry(always, 1, 30, lambda m: None), 0.3)
    except Boom:
        pass
    except asyncio.TimeoutError:
        fail("retry(attempts=1, delay=30) slept after the final attempt")


async def cancel_during_attempt():
    log = []
    started = asyncio.Event()
    calls = []

    async def hang():
        calls.append(1)
        started.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(retry(hang, 5, 0.001, log.append))
    await asyncio.wait_for(started.wait(), 1)
    task.cancel()
    try:
        result = await asyncio.wait_for(task, 1)
    except asyncio.CancelledError:
        pass
    except asyncio.TimeoutError:
        fail("retry kept running for 1 s after being cancelled during an attempt")
    else:
        fail("cancelling retry() during an attempt made it return %r normally: the "
             "CancelledError was swallowed instead of re-raised" % (result,))
    if not task.cancelled():
        fail("task running retry() is not marked cancelled after task.cancel()")
    if len(calls) != 1:
        fail("retry made %d attempts; expected it to stop after cancellation" % len(calls))
    if "retry cancelled" not in log:
        fail("log('retry cancelled') was not called on cancellation (log=%r)" % (log,))


async def cancel_during_backoff():
    log = []
    failed = asyncio.Event()
    calls = []

    async def bad():
        calls.append(1)
        failed.set()
        raise Boom("x")

    task = asyncio.ensure_future(retry(bad, 5, 30, log.append))
    await asyncio.wait_for(failed.wait(), 1)
    await asyncio.sleep(0.01)
    task.cancel()
    try:
        result = await asyncio.wait_for(task, 1)
    except asyncio.CancelledError:
        pass
    except asyncio.TimeoutError:
        fail("retry kept running for 1 s after being cancelled while waiting to retry")
    except Boom:
        fail("cancelling retry() while it waited between attempts raised Boom instead of CancelledError")
    else:
        fail("cancelling retry() between attempts made it return %r: cancellation swallowed" % (result,))
    if not task.cancelled():
        fail("task running retry() is not marked cancelled after cancel during backoff")
    if len(calls) != 1:
        fail("retry made %d attempts after being cancelled during backoff" % len(calls))
    if "retry cancelled" not in log:
        fail("log('retry cancelled') not called when cancelled during backoff (log=%r)" % (log,))


async def main():
    await ordinary()
    await cancel_during_attempt()
    await cancel_during_backoff()


asyncio.run(main())
print("ok")

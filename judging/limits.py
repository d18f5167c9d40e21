"""Per-endpoint limits on judge calls: concurrent requests, requests/min, tokens/min.

Two implementations of the `judging.llm.Limiter` protocol:

- `RedisLimiter`: shared by every worker process on every machine that talks to the same
  Redis. Concurrency is a lease semaphore (a sorted set of holders with expiry, so a
  crashed worker's slots come back), rates are token buckets; each operation is one Lua
  script, atomic on the server.
- `LocalLimiter`: the same rules inside one event loop, for the embedded mode
  (`make run`), where one worker process drives each run.

Both are acquired before every HTTP attempt (retries included) and released after it.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
import uuid
from collections import deque

# A slot is held for one HTTP attempt, which the client's timeout bounds; the lease is a
# little longer, so the slots of a worker that crashed come back within seconds.
SLOT_LEASE_MARGIN_SECONDS = 5.0

_ACQUIRE_SLOT = """
local key, limit, now, lease, holder = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]),
    tonumber(ARGV[3]), ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, now + lease, holder)
  redis.call('EXPIRE', key, math.ceil(lease * 2))
  return 1
end
return 0
"""

# Token bucket: returns 0 when `cost` was taken, else the seconds to wait before retrying.
_TAKE_TOKENS = """
local key, capacity, per_second, now, cost = KEYS[1], tonumber(ARGV[1]),
    tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local state = redis.call('HMGET', key, 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * per_second)
local wait = 0
if tokens >= math.min(cost, capacity) then
  tokens = tokens - cost
else
  wait = (math.min(cost, capacity) - tokens) / per_second
end
redis.call('HSET', key, 'tokens', tokens, 'at', now)
redis.call('EXPIRE', key, 3600)
return tostring(wait)
"""


class RedisLimiter:
    """Limits shared through Redis, keyed by `scope` (one scope per judge config)."""

    def __init__(
        self,
        *,
        redis_url: str,
        scope: str,
        max_concurrency: int,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        slot_lease_seconds: float = 120.0,
        poll_seconds: float = 0.01,
    ) -> None:
        import redis.asyncio as aioredis

        # A bounded pool that makes callers wait for a connection instead of failing
        # when hundreds of calls are in flight.
        self._redis = aioredis.Redis(
            connection_pool=aioredis.BlockingConnectionPool.from_url(
                redis_url, max_connections=64, timeout=None
            )
        )
        self._scope = scope
        self._limit = max_concurrency
        self._rpm = requests_per_minute
        self._tpm = tokens_per_minute
        self._poll = poll_seconds
        self._poll_max = max(poll_seconds, 0.02)
        self._lease = slot_lease_seconds + SLOT_LEASE_MARGIN_SECONDS
        # Slots are counted, not owned: a release frees this process's OLDEST holder.
        # (Freeing the newest would leave the first holder of a busy process in Redis
        # for the whole run, until its lease expired while requests were still in
        # flight: the count would then fall below the real number and admit more.)
        self._holders: deque[str] = deque()
        self._releases: set[asyncio.Task] = set()
        self._slot = self._redis.register_script(_ACQUIRE_SLOT)
        self._take = self._redis.register_script(_TAKE_TOKENS)

    async def _bucket(self, name: str, per_minute: int, cost: float) -> None:
        key = f"judge:{self._scope}:{name}"
        while True:
            wait = float(
                await self._take(
                    keys=[key], args=[per_minute, per_minute / 60.0, time.time(), cost]
                )
            )
            if wait <= 0:
                return
            await asyncio.sleep(wait + random.uniform(0, 0.05))

    async def acquire(self, tokens: int) -> None:
        if self._rpm:
            await self._bucket("rpm", self._rpm, 1)
        if self._tpm:
            await self._bucket("tpm", self._tpm, tokens)
        holder = uuid.uuid4().hex
        key = f"judge:{self._scope}:slots"
        delay = self._poll
        while not await self._slot(
            keys=[key], args=[self._limit, time.time(), self._lease, holder]
        ):
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 1.5, self._poll_max)
        self._holders.append(holder)

    def release(self, used_tokens: int | None = None) -> None:
        if not self._holders:
            return
        holder = self._holders.popleft()
        key = f"judge:{self._scope}:slots"
        # Not awaited (release is synchronous in the protocol); `aclose` waits for these,
        # and the lease expiry is the safety net if the process dies first.
        task = asyncio.get_running_loop().create_task(self._redis.zrem(key, holder))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def renew(self) -> None:
        """Extend this process's slots by a lease from now. A driver calls this with
        every heartbeat, so its slots live for as long as it beats; when it dies they
        come back after one lease, not after the call timeout."""
        if not self._holders:
            return
        key = f"judge:{self._scope}:slots"
        until = time.time() + self._lease
        await self._redis.zadd(key, dict.fromkeys(self._holders, until), xx=True)
        await self._redis.expire(key, math.ceil(self._lease * 2))

    async def in_use(self) -> int:
        key = f"judge:{self._scope}:slots"
        await self._redis.zremrangebyscore(key, "-inf", time.time())
        return int(await self._redis.zcard(key))

    async def aclose(self) -> None:
        if self._releases:
            await asyncio.gather(*self._releases, return_exceptions=True)
        await self._redis.aclose()


class LocalLimiter:
    """The same limits within one event loop (embedded mode, tests)."""

    def __init__(
        self,
        *,
        max_concurrency: int,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
    ) -> None:
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._limit = max_concurrency
        self._rpm = requests_per_minute
        self._tpm = tokens_per_minute
        now = time.monotonic()
        self._buckets = {
            "rpm": [float(requests_per_minute or 0), now],
            "tpm": [float(tokens_per_minute or 0), now],
        }
        self.peak_in_flight = 0

    async def _bucket(self, name: str, per_minute: int, cost: float) -> None:
        state = self._buckets[name]
        while True:
            now = time.monotonic()
            state[0] = min(per_minute, state[0] + (now - state[1]) * per_minute / 60.0)
            state[1] = now
            need = min(cost, per_minute)
            if state[0] >= need:
                state[0] -= cost
                return
            await asyncio.sleep((need - state[0]) / (per_minute / 60.0))

    async def acquire(self, tokens: int) -> None:
        if self._rpm:
            await self._bucket("rpm", self._rpm, 1)
        if self._tpm:
            await self._bucket("tpm", self._tpm, tokens)
        await self._semaphore.acquire()
        self.peak_in_flight = max(
            self.peak_in_flight, self._limit - self._semaphore._value
        )

    def release(self, used_tokens: int | None = None) -> None:
        self._semaphore.release()

    async def aclose(self) -> None:
        return None

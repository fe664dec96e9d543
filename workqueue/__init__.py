"""asyncio port of client-go's workqueue: dedup FIFO, delays, rate-limited retries, metrics."""

from workqueue.clock import Clock, FakeClock, RealClock, TimerHandle
from workqueue.delaying import DelayingQueue
from workqueue.metrics import DURATION_BUCKETS
from workqueue.queue import ShutDown, WorkQueue
from workqueue.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from workqueue.ratelimited import RateLimitingQueue

__all__ = [
    "DURATION_BUCKETS",
    "BucketRateLimiter",
    "Clock",
    "DelayingQueue",
    "FakeClock",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "ShutDown",
    "TimerHandle",
    "WorkQueue",
    "default_controller_rate_limiter",
]

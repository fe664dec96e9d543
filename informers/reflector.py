"""List, then watch from the list's resourceVersion, for as long as it runs.

client-go's reflector (tools/cache/reflector.go), with its guarantees:
- the first LIST is a consistent read of the latest state (resourceVersion ""), paginated (one full
  list instead if a continue token expires). client-go's first list asks for "0", the watch cache;
  "" costs the server an etcd read once per start and can never be older than what a previous
  process of this controller saw.
- a WATCH with bookmarks and a randomised server timeout; a re-watch from the last version after a
  clean close. Unlike client-go, other watch failures also re-watch from the last version rather
  than relist: the server's history is the judge, and a 410 still forces the relist.
- a watch answered 410 (history compacted, or the apiserver restarted and its watch cache began
  afresh) relists at the last version seen, NOT paginated: a LIST at an explicit resourceVersion
  with a limit is read from etcd at exactly that revision - the same stale state, whose next watch
  gets 410 again, until compaction - while without a limit the watch cache serves a state at
  least that new, i.e. the current one. If that list is refused (410 Expired, or 504 "Too large
  resource version") the version is unavailable (client-go's isLastSyncResourceVersionUnavailable)
  and the reflector lists the latest state from etcd (resourceVersion "", paginated). A watch refused
  with 504 "Too large resource version" (etcd restored from a backup) relists the same way.
- backoff with jitter on failures, and an inactivity watchdog.
Every proof that the cache is current stamps `stats.last_sync_monotonic`, which health checks and
`informer_last_sync_age_seconds` read: any watch event (bookmarks included), a completed list, a
watch answered 200. The last two hold only if the watch they lead to works (delivers an event or
runs until the server closes it): a watch refused or failing before its first event withdraws them,
so a list-then-410 loop - blind, though every list succeeds - ages as it should.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
import time
from collections.abc import Callable
from typing import NoReturn

import aiohttp
import orjson

from apimachinery.errors import ApiStatusError
from informers.backoff import Backoff
from informers.options import InformerOptions
from informers.stats import InformerStats
from kubeclient.rest import TRANSIENT_ERRORS, RestClient

log = logging.getLogger(__name__)


class gc_paused:  # lower case: used as a function, `with gc_paused():`
    """Hold off the cyclic garbage collector while decoding a batch, in code that never awaits.

    Decoding a page of 500 pods makes some 20,000 dicts and lists at once, which would set off
    dozens of collections, each also scanning the growing cache; JSON makes no reference cycles,
    so nothing is lost by collecting once afterwards instead. (A class, not a generator-based context
    manager: the watch enters it once per chunk, and this costs a quarter as much.)
    """

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._paused:
            gc.enable()


def _discard(fetch: asyncio.Future) -> None:
    """Drop a prefetch nobody will await: cancel it, or mark its failure as seen so asyncio keeps quiet."""
    if not fetch.done():
        fetch.cancel()
    elif not fetch.cancelled():
        fetch.exception()


def _hint(err: ApiStatusError) -> str:
    """What a refusal that retrying will not fix by itself means (a token revoked, a binding removed)."""
    code = err.code
    if code == 401:
        return " (the server rejects this client's credentials: an expired or revoked token?)"
    if code == 403:
        return " (this client is not allowed: check its RBAC)"
    return ""


class _Deadline:
    """Keeps a watch's watchdog (an asyncio Timeout) `limit` seconds after the last data that arrived, without
    moving its timer for every chunk (a cancelled timer and a new one cost more than decoding a small event).

    Chunks only note the time. A check due a quarter of `limit` before the deadline moves it to `limit` after
    the last data, if any came since it was set; if none came the check ends, and a chunk arriving after it moves
    the deadline itself. So the Timeout fires exactly when no data came for `limit` seconds, as when every chunk
    moved it. (The check runs before the Timeout's own callback even when the loop was held up past both: timers
    run in the order they were due.)"""

    def __init__(self, timeout: asyncio.Timeout, limit: float, loop: asyncio.AbstractEventLoop) -> None:
        self._timeout = timeout
        self._limit = limit
        self._margin = limit / 4
        self._loop = loop
        self._last = loop.time()
        when = timeout.when()
        self._check: asyncio.TimerHandle | None = \
            loop.call_at(when - self._margin, self._extend) if when is not None else None

    def data_arrived(self) -> None:
        self._last = now = self._loop.time()
        if self._check is None:  # past the last check: the deadline is near
            self._move(now + self._limit)

    def close(self) -> None:
        if self._check is not None:
            self._check.cancel()
            self._check = None

    def _extend(self) -> None:
        self._check = None
        deadline = self._last + self._limit
        when = self._timeout.when()
        assert when is not None  # this check is only scheduled for a timeout with a deadline, and only we move it
        if deadline > when:
            self._move(deadline)

    def _move(self, deadline: float) -> None:
        self._timeout.reschedule(deadline)
        self._check = self._loop.call_at(deadline - self._margin, self._extend)


class WatchStalled(Exception):
    """Nothing arrived on the watch for longer than the watchdog allows: a silently dead connection."""


class ShortWatch(Exception):
    """The watch closed within a second without a single event: the server is refusing it somehow."""


class Reflector:
    def __init__(self, client: RestClient, path: str, label_selector: str | None, options: InformerOptions,
                 stats: InformerStats, name: str, *, trim: Callable[[dict], dict], compact: Callable[[dict], dict],
                 replace: Callable[[list[dict], str], None], apply: Callable[[str, dict], None]) -> None:
        """`trim` then `compact` make a decoded object what the cache keeps (`_prepare`); a list copies the
        trimmed objects between the two steps (see `_prepare_page`)."""
        self.client = client
        self.path = path
        self.label_selector = label_selector
        self.options = options
        self.stats = stats
        self.name = name
        self._trim = trim
        self._compact = compact
        self._replace = replace
        self._apply = apply
        self.resource_version = ""  # the last version seen: a list's, then each watch event's
        self._must_list = True  # no list yet, or the last watch or list answered 410
        # The server refused to list at `resource_version` (410, or 504 too large): list the latest state.
        self._version_unavailable = False
        self.listed = False  # a list has been applied since this reflector started
        # A list or a watch's 200 stamped freshness that no working watch has confirmed yet; the stamp
        # to go back to if the watch fails first (see `_tentative_proof`).
        self._tentative = False
        self._before_tentative: float | None = None

    async def run(self) -> NoReturn:
        backoff = Backoff(self.options.backoff)
        while True:
            hint = ""
            try:
                if self._must_list:
                    await self._list()
                await self._watch()
                continue
            except ApiStatusError as err:
                if err.gone or err.version_too_large:
                    self._must_list = True
                self._withdraw_tentative_proof()
                self.stats.record_error(err)
                hint = _hint(err)
                delay = backoff.next_delay(err.retry_after)
            except (*TRANSIENT_ERRORS, WatchStalled, ShortWatch) as err:
                if isinstance(err, WatchStalled):
                    self.stats.watchdog_timeouts += 1
                self._withdraw_tentative_proof()
                self.stats.record_error(err)
                delay = backoff.next_delay()
            action = "listing" if self._must_list else "watching"
            log.warning("%s: %s%s; %s again in %.2f s", self.name, self.stats.last_error, hint, action, delay)
            await asyncio.sleep(delay)

    # --- freshness ------------------------------------------------------------------------

    def _tentative_proof(self) -> None:
        """A list completed, or a watch was answered 200: fresh, if the watch that follows works."""
        before = self.stats.last_sync_monotonic
        self.stats.synced_now()
        if not self._tentative:
            # The very first list is kept whatever follows: the informer did sync then.
            self._tentative, self._before_tentative = True, before if before is not None else \
                self.stats.last_sync_monotonic

    def _confirmed_proof(self) -> None:
        self._tentative = False
        self.stats.synced_now()

    def _withdraw_tentative_proof(self) -> None:
        """The watch failed before its first event: what the list and the 200 seemed to prove did not hold."""
        if self._tentative:
            self.stats.last_sync_monotonic = self._before_tentative

    # --- list -----------------------------------------------------------------------------

    def _relist_version(self) -> str:
        """client-go's relistResourceVersion: the last version seen, or "" (the latest) if it is unavailable."""
        return "" if self._version_unavailable else self.resource_version

    async def _list(self) -> None:
        version = self._relist_version()
        try:
            objects, list_version = await self._list_pages(version)
        except ApiStatusError as err:
            if not (version and (err.gone or err.version_too_large)):
                raise
            self._version_unavailable = True
            log.info("%s: cannot list at version %s (%s); listing the latest state", self.name, version, err)
            objects, list_version = await self._list_pages(self._relist_version())
        self._version_unavailable = False
        self._replace(objects, list_version)
        self.resource_version = list_version
        self._must_list = False
        self.listed = True
        self._tentative_proof()
        if self.stats.lists:
            self.stats.relists += 1
        self.stats.lists += 1

    async def _list_pages(self, version: str) -> tuple[list[dict], str]:
        first: dict[str, str] = {}
        if version:
            # As client-go: a relist is at least as fresh as what was seen, and asked for in ONE request.
            # With a limit the server would read etcd at exactly this version (the stale state we
            # had); without one its watch cache answers with the latest state.
            first["resourceVersion"] = version
        else:
            first["limit"] = str(self.options.page_size)
        if self.label_selector:
            first["labelSelector"] = self.label_selector
        # Later pages come from the snapshot their continue token names: no resourceVersion with them.
        later = {k: v for k, v in first.items() if k != "resourceVersion"}
        objects: list[dict] = []
        fetch = self._fetch(first)
        continuing = False
        try:
            while True:
                try:
                    body = await fetch
                except ApiStatusError as err:
                    if not (err.gone and continuing):
                        raise
                    log.info("%s: continue token expired; listing everything in one request", self.name)
                    objects, continuing = [], False
                    fetch = self._fetch({k: v for k, v in first.items() if k != "limit"})
                    continue
                with gc_paused():
                    page = orjson.loads(body)
                del body
                meta = page.pop("metadata", None) or {}
                token, version = meta.get("continue"), meta.get("resourceVersion", "")
                if token:
                    # Ask for the next page now, and let the request leave, so that the server
                    # serves it while this one is being prepared.
                    fetch, continuing = self._fetch({**later, "continue": token}), True
                    await asyncio.sleep(0)
                objects.extend(self._prepare_page(page.pop("items", None) or []))
                del page
                if not token:
                    return objects, version
        finally:
            _discard(fetch)

    def _prepare(self, obj: dict) -> dict:
        return self._compact(self._trim(obj))

    def _prepare_page(self, items: list[dict]) -> list[dict]:
        """A page's objects trimmed, then copied afresh, then compacted, in code that never awaits.

        Decoding a page makes its objects side by side in the allocator's memory, and trimming keeps
        a small part of each: the kept parts would hold on to nearly every block of the page's
        memory (free space scattered among them that Python can neither return nor fill with
        anything larger), so a cache would cost the size of the pages it came from. Copying what
        is kept (JSON out and in again) makes new objects packed together, and frees the page
        whole. The copy comes before compaction, which shares sub-objects between objects and
        would be undone by it.
        """
        trim, compact = self._trim, self._compact
        with gc_paused():
            kept = orjson.dumps([trim(item) for item in items])
            items.clear()
            return [compact(obj) for obj in orjson.loads(kept)]

    def _fetch(self, params: dict[str, str]) -> asyncio.Future[bytes]:
        return asyncio.ensure_future(self.client.get(self.path, params, timeout=self.options.request_timeout))

    # --- watch ----------------------------------------------------------------------------

    async def _watch(self) -> None:
        low, high = self.options.watch_timeout
        params = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": self.resource_version,
                  "timeoutSeconds": str(max(1, int(random.uniform(low, high))))}
        if self.label_selector:
            params["labelSelector"] = self.label_selector
        started = time.monotonic()
        response = await self.client.stream(self.path, params, timeout=self.options.request_timeout)
        self.stats.watches += 1
        self._tentative_proof()  # answered 200: every change after our version is on its way
        try:
            received = await self._consume(response)
        finally:
            response.close()
        elapsed = time.monotonic() - started
        if received == 0 and elapsed < self.options.min_watch_duration:
            raise ShortWatch(f"watch closed after {elapsed:.3f} s without an event")
        self._tentative = False  # it ran its course: the server kept it open, and nothing was missed

    async def _consume(self, response: aiohttp.ClientResponse) -> int:
        """Apply events until the server closes the stream; returns how many arrived."""
        limit = self.options.watchdog_timeout
        loop = asyncio.get_running_loop()
        watchdog = asyncio.timeout(limit)
        try:
            async with watchdog:
                deadline = _Deadline(watchdog, limit, loop)
                try:
                    received = await self._read(response, deadline)
                finally:
                    deadline.close()
        except TimeoutError:
            if watchdog.expired():
                raise WatchStalled(f"no data on the watch for {limit:g} s") from None
            raise
        return received

    async def _read(self, response: aiohttp.ClientResponse, deadline: _Deadline) -> int:
        received = 0
        tail = b""
        while chunk := await response.content.readany():
            deadline.data_arrived()
            # Events are newline-delimited JSON; a chunk may end inside one (and a stream cut
            # inside one leaves a tail that is dropped: the re-watch sends that event again).
            lines = (tail + chunk if tail else chunk).split(b"\n")
            tail = lines.pop()
            with gc_paused():
                for line in lines:
                    if line:
                        self._handle(orjson.loads(line))
                        received += 1
        return received

    def _handle(self, event: dict) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        stats = self.stats
        stats.last_event_time = time.time()
        if kind == "ERROR":
            raise ApiStatusError.from_status(obj)
        self._confirmed_proof()
        # Read before `_prepare`, which may hand back a different object.
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            stats.bookmarks += 1
        elif kind == "ADDED":
            stats.added += 1
            self._apply(kind, self._prepare(obj))
        elif kind == "MODIFIED":
            stats.modified += 1
            self._apply(kind, self._prepare(obj))
        elif kind == "DELETED":
            stats.deleted += 1
            self._apply(kind, self._prepare(obj))
        else:
            log.warning("%s: ignoring a watch event of unknown type %r", self.name, kind)
            return
        if version:
            self.resource_version = version

"""Sessions read through the shared cache that keep working when the cache does not.

Django's `cached_db` store writes sessions to the database and the cache and reads the cache
first, but several of its calls reach the cache unguarded: with Redis down every signed-in
request was a 500. This store treats the cache as an optional speed-up: every cache call is
guarded, and a failure sends the request to the database (the record) and skips the cache for
a few seconds (so an outage costs one failed connection per process every few seconds, not one
per request). Nobody is signed out and no request fails while Redis is away.

A session deleted (sign-out, flush) while the cache is down may still sit in the cache when it
returns; cache entries therefore live at most CONCORD_SESSION_CACHE_SECONDS (default 300), after
which the database, where the session is gone, decides. Authentication itself (the user row,
is_active, the password hash) is read from the database on every request, so a deactivated or
removed user is refused at once whatever the cache holds.
"""

import logging
import time

from django.conf import settings
from django.contrib.sessions.backends import cached_db

logger = logging.getLogger(__name__)

# Monotonic time before which this process does not try the cache again.
_skip_cache_until = 0.0
RETRY_AFTER_SECONDS = 5.0


def _cache_usable() -> bool:
    return time.monotonic() >= _skip_cache_until


def _cache_failed(action: str) -> None:
    global _skip_cache_until
    if _cache_usable():
        logger.warning("Session cache unavailable (%s); using the database", action, exc_info=True)
    _skip_cache_until = time.monotonic() + RETRY_AFTER_SECONDS


def _ttl(age: int) -> int:
    return max(1, min(age, int(getattr(settings, "CONCORD_SESSION_CACHE_SECONDS", 300))))


class SessionStore(cached_db.SessionStore):
    def _cache_get(self):
        if not _cache_usable():
            return None
        try:
            return self._cache.get(self.cache_key)
        except Exception:  # noqa: BLE001 - any cache failure: the database decides
            _cache_failed("get")
            return None

    def _cache_set(self, data, age: int) -> None:
        if not _cache_usable():
            return
        try:
            self._cache.set(self.cache_key, data, _ttl(age))
        except Exception:  # noqa: BLE001
            _cache_failed("set")

    def _cache_delete(self, key: str) -> None:
        if not _cache_usable():
            return
        try:
            self._cache.delete(key)
        except Exception:  # noqa: BLE001
            _cache_failed("delete")

    def load(self):
        data = self._cache_get()
        if data is None:
            s = self._get_session_from_db()
            if s:
                data = self.decode(s.session_data)
                self._cache_set(data, self.get_expiry_age(expiry=s.expire_date))
            else:
                data = {}
        return data

    def exists(self, session_key):
        if session_key and _cache_usable():
            try:
                if (self.cache_key_prefix + session_key) in self._cache:
                    return True
            except Exception:  # noqa: BLE001
                _cache_failed("exists")
        # Through the database store's own check (cached_db's would ask the cache again).
        return super(cached_db.SessionStore, self).exists(session_key)

    def save(self, must_create=False):
        super(cached_db.SessionStore, self).save(must_create)
        self._cache_set(self._session, self.get_expiry_age())

    def delete(self, session_key=None):
        super(cached_db.SessionStore, self).delete(session_key)
        if session_key is None:
            if self.session_key is None:
                return
            session_key = self.session_key
        self._cache_delete(self.cache_key_prefix + session_key)

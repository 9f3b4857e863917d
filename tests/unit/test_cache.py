"""The Redis cache keeps one redis-py client per connection pool, shared by every thread."""

import os
import threading

import pytest

from concord.cache import RedisCache

pytestmark = pytest.mark.redis


def cache():
    url = os.environ.get("CELERY_BROKER_URL", "")
    return RedisCache(url, {"KEY_PREFIX": "concord-test-cache", "OPTIONS": {}})


def test_every_call_and_thread_uses_the_same_client_and_sees_the_same_values():
    c = cache()
    c.set("k", {"value": 1}, 30)
    clients, seen = set(), []

    def read():
        seen.append(c.get("k"))
        clients.add(id(c._cache.get_client("k")))
        clients.add(id(c._cache.get_client("k", write=True)))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [{"value": 1}] * 8 and len(clients) == 1
    c.delete("k")
    assert c.get("k") is None and c.get("k", "gone") == "gone"
    assert c.add("n", 1, 30) is True and c.incr("n") == 2
    c.delete("n")

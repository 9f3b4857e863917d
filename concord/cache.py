"""Django's Redis cache, with one redis-py client per connection pool instead of one per call.

Django builds a new `redis.Redis` for every cache call, and building one fills its table of
response callbacks (some 170 entries): about as much CPU as the round trip itself, paid on every
session read. A client is thread-safe (each command checks a connection out of the pool), so
one per pool serves every thread of the process.
"""

from django.core.cache.backends import redis as django_redis


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients.setdefault(id(pool), self._client(connection_pool=pool))
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = RedisCacheClient

"""Concord's WSGI application with per-process counters of what a request sends to PostgreSQL
and Redis, for bench/loop.py's counting run only (never served in production).

Counted at the driver, so every path is seen (Django's cursors, the engine's raw psycopg
cursors, Connection.execute): SQL statements; transactions, as PostgreSQL sees them (a statement
in autocommit mode is one, and so is every BEGIN psycopg sends before the first statement of a
block); and Redis commands (sessions, cache, broker). `GET /__bench/counts` answers this
process's counters and resets them: a client on one keep-alive connection stays on one worker,
so it can bracket exactly the requests it made.
"""

import json
import threading

import psycopg
import redis
from psycopg import pq

from concord.wsgi import application as concord_application

_lock = threading.Lock()
COUNTS = {"statements": 0, "transactions": 0, "redis_commands": 0, "requests": 0}
# Statement -> executions, by its first words (to see which ones run).
SEEN: dict[str, int] = {}


def _bump(name: str, n: int = 1) -> None:
    with _lock:
        COUNTS[name] += n


def _counted(execute):
    def wrapper(self, *args, **kwargs):
        conn = self.connection
        # psycopg opens a transaction (BEGIN) before the first statement outside autocommit.
        if conn.autocommit or conn.info.transaction_status == pq.TransactionStatus.IDLE:
            _bump("transactions")
        _bump("statements")
        head = " ".join(str(args[0] if args else kwargs.get("query"))[:90].split())
        with _lock:
            SEEN[head] = SEEN.get(head, 0) + 1
        return execute(self, *args, **kwargs)

    return wrapper


psycopg.Cursor.execute = _counted(psycopg.Cursor.execute)
psycopg.Cursor.executemany = _counted(psycopg.Cursor.executemany)
_redis_execute = redis.Redis.execute_command


def _redis_counted(self, *args, **kwargs):
    _bump("redis_commands")
    return _redis_execute(self, *args, **kwargs)


redis.Redis.execute_command = _redis_counted


def application(environ, start_response):
    if environ.get("PATH_INFO") == "/__bench/counts":
        with _lock:
            body = json.dumps({**COUNTS, "seen": SEEN}).encode()
            for name in COUNTS:
                COUNTS[name] = 0
            SEEN.clear()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    _bump("requests")
    return concord_application(environ, start_response)

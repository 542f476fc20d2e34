"""Who may connect, and what each user may do: password hashes, the authenticator and the
destination authorizer of the network server.

Theory of operation
-------------------
*Authentication* happens once per connection, on ``Connect`` (JMS 2.0 §4.3.1, CONN-03,
EXC-06). Passwords are stored only as salted scrypt hashes,
``scrypt$N$r$p$SALT_B64$HASH_B64`` (:func:`hash_password`). Checking one costs tens of
milliseconds on purpose, so the server runs :meth:`Authenticator.check` in a worker thread,
never on its event loop. An unknown user is checked against a dummy hash so that the answer
takes as long as for a known one (no user enumeration by timing).

*Authorization* is asked by the broker engine (``Broker(authorizer=...)``) before it sends
to, consumes from, browses or creates a destination, and (``admin``) before the operator
requests ``Stat`` and ``Purge``. :class:`Authorizer` answers from a table
``principal -> action -> [patterns]`` where a principal is a user name, ``role:NAME`` (every
user with that role), ``anonymous`` (a connection without a user) or ``*`` (everybody).
``admin`` on a destination implies every other action on it. Temporary destinations are
never checked: they belong to the connection that created them and the broker already
enforces that.

Destination patterns (also in ``docs/operations.md``): ``[KIND://]NAME`` where KIND is
``queue``, ``topic`` or ``*`` (omitted: any kind) and NAME is dot-separated segments; a segment
``*`` matches exactly one segment, a final ``>`` matches one or more trailing segments. So
``queue://orders.*`` matches ``queue://orders.eu`` but not ``queue://orders`` nor
``queue://orders.eu.late``; ``orders.>`` matches both ``queue://orders.eu`` and
``topic://orders.eu.late``; ``>`` matches everything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Final, Literal

__all__ = [
    "ACTIONS",
    "Action",
    "Authenticator",
    "Authorizer",
    "compile_pattern",
    "hash_password",
    "verify_password",
]

Action = Literal["send", "consume", "browse", "create", "admin"]
ACTIONS: Final[tuple[Action, ...]] = ("send", "consume", "browse", "create", "admin")
ANONYMOUS: Final = "anonymous"
EVERYONE: Final = "*"
ROLE_PREFIX: Final = "role:"

SCRYPT_N: Final = 2**14
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
SALT_BYTES: Final = 16
HASH_BYTES: Final = 32
_MAX_N: Final = 2**20  # refuses hashes that would take seconds and gigabytes to check


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"),
        salt=salt,
        n=n,
        r=r,
        p=p,
        maxmem=256 * n * r * p + (1 << 20),
        dklen=dklen,
    )


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """A salted scrypt hash of ``password`` for the ``[users]`` table of the server config:
    ``scrypt$N$r$p$SALT_B64$HASH_B64``.

    Raises:
        ValueError: ``n`` is not a power of two above 1, or ``r``/``p`` are not positive.
    """
    if n < 2 or n & (n - 1) or n > _MAX_N or r < 1 or p < 1:
        raise ValueError(f"scrypt parameters n={n} r={r} p={p}: n must be a power of two <= 2**20")
    salt = os.urandom(SALT_BYTES)
    digest = _scrypt(password, salt, n, r, p, HASH_BYTES)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def _parse_hash(stored: str) -> tuple[int, int, int, bytes, bytes]:
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise ValueError(
            "a password hash must look like scrypt$N$r$p$SALT_B64$HASH_B64: "
            "make one with ternmq.server.security.hash_password()"
        )
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt = base64.b64decode(parts[4], validate=True)
        digest = base64.b64decode(parts[5], validate=True)
    except ValueError as exc:
        raise ValueError(f"malformed scrypt hash: {exc}") from exc
    if n < 2 or n & (n - 1) or n > _MAX_N or r < 1 or p < 1 or not salt or not digest:
        raise ValueError(f"scrypt hash with unusable parameters n={n} r={r} p={p}")
    return n, r, p, salt, digest


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches the hash ``stored`` (constant-time comparison).

    Raises:
        ValueError: ``stored`` is not a hash made by :func:`hash_password`.
    """
    n, r, p, salt, digest = _parse_hash(stored)
    return hmac.compare_digest(_scrypt(password, salt, n, r, p, len(digest)), digest)


_DUMMY_HASH: Final = (
    f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(b'ternmq-dummy-salt')}${_b64(bytes(32))}"
)


class Authenticator:
    """Checks the credentials of a ``Connect``.

    Args:
        users: ``{user: password hash}``.
        anonymous: whether a connection without a user name is admitted.

    Raises:
        ValueError: a hash is malformed (checked when the config is loaded).
    """

    def __init__(self, users: Mapping[str, str], anonymous: bool) -> None:
        for name, stored in users.items():
            try:
                _parse_hash(stored)
            except ValueError as exc:
                raise ValueError(f"users.{name}.password: {exc}") from exc
        self.users = dict(users)
        self.anonymous = anonymous

    def needs_hashing(self, user: str | None) -> bool:
        """Whether :meth:`check` will compute a hash (and so belongs off the event loop)."""
        return user is not None and bool(self.users)

    def principal(self, user: str | None) -> str | None:
        """The user an accepted connection acts as: None (anonymous) when no users are
        configured, since a name nobody verified must not reach ``JMSXUserID``."""
        return user if self.users else None

    def check(self, user: str | None, password: str | None) -> str | None:
        """None if the credentials are accepted, else the reason (for the
        ``JMSSecurityException`` reply). Slow when a user is given: run it in a thread.
        With no users configured, credentials are ignored and the connection is anonymous."""
        if user is None or not self.users:
            if self.anonymous:
                return None
            return "anonymous access is disabled on this broker: give a user name and password"
        stored = self.users.get(user)
        ok = verify_password(password or "", stored or _DUMMY_HASH)
        if stored is None or not ok:
            return f"authentication failed for user {user!r}: unknown user or wrong password"
        return None


def compile_pattern(pattern: str) -> Callable[[str], bool]:
    """A predicate on destination texts (``queue://a.b``) for one permission pattern.

    Raises:
        ValueError: an unknown kind, an empty segment, or ``>`` that is not the last segment.
    """
    kind, sep, name = pattern.partition("://")
    if not sep:
        kind, name = "*", pattern
    if kind not in ("queue", "topic", "*"):
        raise ValueError(
            f"destination pattern {pattern!r}: the kind must be queue://, topic:// or *://"
        )
    segments = name.split(".")
    if not name or any(not s for s in segments):
        raise ValueError(f"destination pattern {pattern!r} has an empty name segment")
    if ">" in segments[:-1] or any(
        s != ">" and s != "*" and ("*" in s or ">" in s) for s in segments
    ):
        raise ValueError(
            f"destination pattern {pattern!r}: '*' and '>' must be whole segments, "
            "and '>' only the last one"
        )
    tail = segments[-1] == ">"
    fixed = segments[:-1] if tail else segments

    def matches(destination: str) -> bool:
        dkind, dsep, dname = destination.partition("://")
        if not dsep or (kind != "*" and dkind != kind):
            return False
        parts = dname.split(".")
        if tail:
            if len(parts) <= len(fixed):
                return False
        elif len(parts) != len(fixed):
            return False
        return all(f == "*" or f == p for f, p in zip(fixed, parts))

    return matches


class Authorizer:
    """``authorizer(user, action, destination_text) -> bool`` for the broker engine.

    Args:
        permissions: ``{principal: {action: [pattern, ...]}}`` (see the module doc).
        roles: ``{user: (role, ...)}``.

    Raises:
        ValueError: an unknown action or a malformed pattern.
    """

    _CACHE_LIMIT: Final = 10_000

    def __init__(
        self,
        permissions: Mapping[str, Mapping[str, Iterable[str]]],
        roles: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self._rules: dict[str, dict[str, list[Callable[[str], bool]]]] = {}
        self._everything: set[tuple[str, str]] = set()  # (principal, action) granted ">"
        for principal, table in permissions.items():
            rules = self._rules.setdefault(principal, {})
            for action, patterns in table.items():
                if action not in ACTIONS:
                    raise ValueError(
                        f"permissions.{principal}: unknown action {action!r}; "
                        f"use one of {', '.join(ACTIONS)}"
                    )
                patterns = list(patterns)
                rules.setdefault(action, []).extend(compile_pattern(p) for p in patterns)
                if any(p in (">", "*://>") for p in patterns):
                    self._everything.add((principal, action))
        self._roles = {user: tuple(rs) for user, rs in (roles or {}).items()}
        self._cache: dict[tuple[str | None, str, str], bool] = {}

    def principals(self, user: str | None) -> list[str]:
        """The principals whose grants apply to ``user``."""
        if user is None:
            return [ANONYMOUS, EVERYONE]
        return [user, *(ROLE_PREFIX + r for r in self._roles.get(user, ())), EVERYONE]

    def grants_everything(self, user: str | None, action: str) -> bool:
        """Whether ``user`` holds ``action`` (or ``admin``) on every destination: granted
        the pattern ``>`` (or ``*://>``), itself or through a role or ``*``."""
        return any(
            (principal, act) in self._everything
            for principal in self.principals(user)
            for act in (action, "admin")
        )

    def __call__(self, user: str | None, action: str, destination: str) -> bool:
        key = (user, action, destination)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        allowed = False
        for principal in self.principals(user):
            rules = self._rules.get(principal)
            if rules is None:
                continue
            for act in (action, "admin"):
                if any(m(destination) for m in rules.get(act, ())):
                    allowed = True
                    break
            if allowed:
                break
        if len(self._cache) >= self._CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = allowed
        return allowed

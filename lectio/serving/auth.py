"""Who is asking: principals from a verified JWT, never from a query parameter.

A study tool signs in its reader itself and sends `Authorization: Bearer <JWT>`, signed HS256
with the secret the service knows (LECTIO_AUTH_SECRET) or RS256 with the private key whose
public half the service knows (LECTIO_AUTH_PUBLIC_KEY), with the claims `principals` (a list such
as ["user:alice", "group:staff"]) and `exp`, at most LECTIO_TOKEN_MAX_SECONDS (default 3600) away:
a leaked token is good for that long, however far off its signer put its `exp`. No token: the
reader is anonymous and sees `public`. A signed-in reader sees `public` too, plus what names one
of their principals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import jwt

from lectio.index.security import token_max_seconds
from lectio.sources import check_principals

PUBLIC = ("public",)
# RFC 7518 3.2: an HS256 key shorter than the hash (32 bytes) is guessable offline from one token.
MIN_SECRET_BYTES = 32


class AuthError(Exception):
    """A request refused before any search: `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Verifier:
    secret: str | None = None  # HS256
    public_key: str | None = None  # RS256, PEM
    # The furthest `exp` accepted: the same setting and ceiling as `lectio token` and the database.
    max_seconds: int = field(default_factory=token_max_seconds)

    def __post_init__(self):
        # Refused at start, in one line (the CLI prints a ValueError so): PyJWT only warns.
        if self.secret is not None and len(self.secret.encode()) < MIN_SECRET_BYTES:
            raise ValueError(f"LECTIO_AUTH_SECRET must be at least {MIN_SECRET_BYTES} bytes "
                             f"(it is {len(self.secret.encode())}): `openssl rand -hex 32` makes one")

    def principals(self, authorization: str | None) -> tuple[str, ...]:
        if not authorization:
            return PUBLIC
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(401, "the Authorization header must be 'Bearer <JWT>'")
        claims = self._claims(token.strip())
        self._check_lifetime(claims["exp"])
        given = claims.get("principals")
        if not isinstance(given, list) or not all(isinstance(p, str) for p in given):
            raise AuthError(400, "the token's 'principals' claim must be a list of strings")
        try:
            principals = check_principals(given)
        except ValueError as exc:
            raise AuthError(400, f"the token's principals: {exc}") from None
        return tuple(dict.fromkeys((*PUBLIC, *principals)))

    def _claims(self, token: str) -> dict:
        keys = [(k, alg) for k, alg in ((self.secret, "HS256"), (self.public_key, "RS256")) if k]
        if not keys:
            raise AuthError(401, "this service accepts no tokens (no LECTIO_AUTH_SECRET or LECTIO_AUTH_PUBLIC_KEY)")
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.InvalidTokenError as exc:
            raise AuthError(401, f"the token is not a JWT: {exc}") from None
        key = next((k for k, alg in keys if alg == algorithm), None)
        if key is None:
            raise AuthError(401, f"tokens signed {algorithm} are not accepted here")
        try:
            return jwt.decode(token, key, algorithms=[algorithm], options={"require": ["exp", "principals"]})
        except jwt.ExpiredSignatureError:
            raise AuthError(401, "the token has expired") from None
        except jwt.InvalidTokenError as exc:
            raise AuthError(401, f"the token is not valid: {exc}") from None

    def _check_lifetime(self, exp) -> None:
        # PyJWT has checked that int(exp) works and is not past; it also takes "1999999999", which
        # RFC 7519 does not (a NumericDate is a JSON number).
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            raise AuthError(401, "the token's 'exp' must be a number of seconds since the epoch")
        if exp > time.time() + self.max_seconds:
            raise AuthError(401, f"the token's 'exp' is more than {self.max_seconds} s away "
                                 f"(LECTIO_TOKEN_MAX_SECONDS): sign tokens that live less long")

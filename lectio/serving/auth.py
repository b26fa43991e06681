"""Who is asking: principals from a verified JWT, never from a query parameter.

A study tool signs in its reader itself and sends `Authorization: Bearer <JWT>`, signed HS256
with the secret the service knows (LECTIO_AUTH_SECRET) or RS256 with the private key whose
public half the service knows (LECTIO_AUTH_PUBLIC_KEY), with the claims `principals` (a list such
as ["user:alice", "group:staff"]) and `exp`, at most LECTIO_TOKEN_MAX_SECONDS (default 3600) away:
a leaked token is good for that long, however far off its signer put its `exp`. With
LECTIO_AUTH_ISSUER or LECTIO_AUTH_AUDIENCE set, a token must also carry that `iss` or `aud`. No
token: the reader is anonymous and sees `public`. A signed-in reader sees `public` too, plus what
names one of their principals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import jwt

from lectio.index.security import token_max_seconds
from lectio.settings import AuthSettings
from lectio.sources import callers

PUBLIC = ("public",)
# RFC 7518 3.2: an HS256 key shorter than the hash (32 bytes) is guessable offline from one token.
MIN_SECRET_BYTES = 32
# A reader is a user and a few groups. Every principal is signed into the database token of each
# search and matched against the ACL of every candidate row, so a token naming thousands makes
# every search it sends slow for everyone; these caps are far above any real reader's.
MAX_PRINCIPALS = 64
MAX_PRINCIPAL_CHARS = 128
# The header that carries a token, with MAX_PRINCIPALS of MAX_PRINCIPAL_CHARS each and an RS256
# signature, fits easily; anything longer is refused before it is decoded. (The request's head as
# a whole is capped by the server, lectio.serving.app.MAX_HEAD_BYTES.)
MAX_AUTHORIZATION_BYTES = 16 * 1024


class AuthError(Exception):
    """A request refused before any search: `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Verifier:
    secret: str | None = None  # HS256
    public_key: str | None = None  # RS256, PEM
    issuer: str | None = None  # when set, the `iss` every token must carry
    audience: str | None = None  # when set, the `aud` every token must carry
    # The furthest `exp` accepted: the same setting and ceiling as `lectio token` and the database.
    max_seconds: int = field(default_factory=token_max_seconds)

    def __post_init__(self):
        # Refused at start, in one line (the CLI prints a ValueError so): PyJWT only warns.
        if self.secret is not None and len(self.secret.encode()) < MIN_SECRET_BYTES:
            raise ValueError(f"LECTIO_AUTH_SECRET must be at least {MIN_SECRET_BYTES} bytes "
                             f"(it is {len(self.secret.encode())}): `openssl rand -hex 32` makes one")

    @classmethod
    def of(cls, settings: AuthSettings) -> "Verifier":
        return cls(secret=settings.secret, public_key=settings.public_key, issuer=settings.issuer,
                   audience=settings.audience)

    def principals(self, authorization: str | None) -> tuple[str, ...]:
        if not authorization:
            return PUBLIC
        if len(authorization.encode()) > MAX_AUTHORIZATION_BYTES:
            raise AuthError(431, f"the Authorization header is longer than {MAX_AUTHORIZATION_BYTES} bytes")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(401, "the Authorization header must be 'Bearer <JWT>'")
        claims = self._claims(token.strip())
        self._check_lifetime(claims["exp"])
        given = claims.get("principals")
        if not isinstance(given, list) or not all(isinstance(p, str) for p in given):
            raise AuthError(400, "the token's 'principals' claim must be a list of strings")
        if len(given) > MAX_PRINCIPALS:
            raise AuthError(400, f"the token names {len(given)} principals; at most {MAX_PRINCIPALS} are accepted")
        if any(len(p) > MAX_PRINCIPAL_CHARS for p in given):
            raise AuthError(400, f"a principal in the token is longer than {MAX_PRINCIPAL_CHARS} characters")
        try:
            return callers(given)
        except ValueError as exc:
            raise AuthError(400, f"the token's principals: {exc}") from None

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
        required = ["exp", "principals", *(["iss"] if self.issuer else []), *(["aud"] if self.audience else [])]
        try:
            # PyJWT checks `iss` and `aud` against what is passed, and refuses a token with an
            # `aud` when no audience is configured.
            return jwt.decode(token, key, algorithms=[algorithm], issuer=self.issuer, audience=self.audience,
                              options={"require": required})
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

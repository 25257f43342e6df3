"""The runner's network edge: every reply body bounded and checked before the SDK parses it.

Methods note: the openai client is given an HTTP transport (:class:`BoundedTransport`) that wraps
the default one. It asks only for ``gzip``/``deflate``/identity encodings, reads the raw body to at
most :data:`MAX_BODY_BYTES` (refused past it), decompresses it itself to at most the same bound (a
gzip bomb stops at the bound, never expands in memory), and for a successful JSON reply parses it
once under the door's rules (analysis.safeio.loads_json: nesting depth checked first, NaN and
Infinity refused, no lone surrogates). A redirect is refused (the client follows none): the
message names the target so the user can pass the final URL. A refused reply raises the HTTP
library's ``DecodingError``, which the client reports as an infrastructure fault of that attempt
(the sweep's retry rule applies, and the attempt stays in the data as an invalid row).
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any

import openai

from analysis.safeio import SafeIOError, loads_json

MAX_BODY_BYTES = 64 << 20
"""Largest reply body accepted, before and after decompression (64 MiB)."""

http: Any = importlib.import_module(openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0])
"""The HTTP library the openai client is built on (httpx, or httpx2 in newer releases)."""

_DROP = {b"content-encoding", b"content-length", b"transfer-encoding"}


def _inflate(data: bytes, encoding: str, limit: int) -> bytes:
    if encoding in ("", "identity"):
        return data
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise http.DecodingError(f"reply body uses content-encoding {encoding!r}; only gzip and deflate are read")
    wbits = 16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS
    for bits in (wbits, -zlib.MAX_WBITS) if encoding == "deflate" else (wbits,):
        d = zlib.decompressobj(bits)
        try:
            out = d.decompress(data, limit + 1)
        except zlib.error:
            continue
        if len(out) > limit or d.unconsumed_tail:
            raise http.DecodingError(f"reply body expands past {limit >> 20} MiB when decompressed; refused")
        return out
    raise http.DecodingError(f"reply body is not valid {encoding} data")


class BoundedTransport(http.AsyncBaseTransport):
    """An async transport that bounds, decompresses and checks every reply (see the module note)."""

    def __init__(self, inner: Any = None, limit: int = MAX_BODY_BYTES, *, check_json: bool = True) -> None:
        self.inner = inner if inner is not None else http.AsyncHTTPTransport()
        self.limit = limit
        self.check_json = check_json
        """Whether a JSON reply is parsed here (depth, strictness); off where the caller parses it itself."""

    async def handle_async_request(self, request: Any) -> Any:
        request.headers["accept-encoding"] = "gzip, deflate"
        response = await self.inner.handle_async_request(request)
        status = response.status_code
        try:
            if 300 <= status < 400:
                where = response.headers.get("location", "?")
                raise http.DecodingError(f"the endpoint answered HTTP {status}, a redirect to {where}; redirects are "
                                         "refused: pass the final URL as --base-url")
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.limit:
                raise http.DecodingError(f"reply body is {declared} bytes, above the {self.limit >> 20} MiB limit")
            raw = bytearray()
            async for chunk in response.aiter_raw():
                raw += chunk
                if len(raw) > self.limit:
                    raise http.DecodingError(f"reply body is above the {self.limit >> 20} MiB limit; refused")
        finally:
            await response.aclose()
        body = _inflate(bytes(raw), response.headers.get("content-encoding", "").strip().lower(), self.limit)
        if self.check_json and 200 <= status < 300 and "json" in response.headers.get("content-type", "json"):
            try:
                loads_json(body, "reply")
            except SafeIOError as exc:
                raise http.DecodingError(f"reply body refused: {exc.message}") from None
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _DROP]
        return http.Response(status, headers=headers, content=body, request=request,
                             extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_http_client(**kwargs: Any) -> Any:
    """The openai SDK's default async HTTP client, with :class:`BoundedTransport` and no redirects."""
    return openai.DefaultAsyncHttpxClient(transport=BoundedTransport(), follow_redirects=False, **kwargs)

"""The app's request class: a body over `MAX_CONTENT_LENGTH` is a 413 however it is framed.

With `Content-Length`, werkzeug refuses a body over the cap before reading it. Without one (a chunked body:
Granian and werkzeug's server both set `wsgi.input_terminated` and hand the app the dechunked stream), it
reads through a `LimitedStream` whose `read()` stops at the cap and returns what it holds: the first MiB
of a longer body, which the API then parsed (a valid Link token body followed by 2 MiB of spaces made a
token; a 2 MiB string was "not valid JSON"). Here, a read of the whole body that reaches the cap looks for
one more byte: if there is one, the body is over the cap and the request gets werkzeug's
`RequestEntityTooLarge` (the API's 413 `BODY_TOO_LARGE`), never a parse of its prefix. A body of exactly
the cap is read whole, as with `Content-Length`.

`create_app` sets `app.request_class = bounded(app.request_class)` last, once the extensions have set
theirs (htmx_flask's request class), so the stream is this one whatever else the request class adds.
"""

from __future__ import annotations

import functools
import typing as t

from werkzeug.utils import cached_property
from werkzeug.wsgi import LimitedStream, get_input_stream


class WholeBodyStream(LimitedStream):
    """A stream capped at `limit` whose full read raises 413 when the body goes on past the cap."""

    def readall(self) -> bytes:
        data = super().readall()
        if self.is_exhausted and self._stream.read(1):
            self.on_exhausted()  # the limit is a maximum: raises RequestEntityTooLarge
        return data


class WholeBody:
    """A request-class mixin: `stream` is a `WholeBodyStream` where werkzeug's would stop at the cap."""

    @cached_property
    def stream(self) -> t.IO[bytes]:
        if self.shallow:
            raise RuntimeError("This request was created with 'shallow=True': its body cannot be read.")
        limit = self.max_content_length
        stream = get_input_stream(self.environ, max_content_length=limit)  # 413 on a Content-Length over it
        if limit is not None and "wsgi.input_terminated" in self.environ:
            return t.cast(t.IO[bytes], WholeBodyStream(self.environ["wsgi.input"], limit, is_max=True))
        return stream


@functools.cache  # one class per request class, not per app
def bounded(request_class: type) -> type:
    """`request_class` with the whole-body stream (the same class when it has it already)."""
    if issubclass(request_class, WholeBody):
        return request_class
    return type(f"WholeBody{request_class.__name__}", (WholeBody, request_class), {})

"""Time-ordered UUIDs (console.core.ids)."""

from __future__ import annotations

import time
import uuid

from console.core.ids import uuid7


def test_a_uuid7_is_a_version_7_rfc_uuid_carrying_the_current_millisecond():
    before = time.time_ns() // 1_000_000
    made = uuid7()
    after = time.time_ns() // 1_000_000
    assert isinstance(made, uuid.UUID)
    assert made.version == 7 and made.variant == uuid.RFC_4122
    assert before <= made.int >> 80 <= after
    assert uuid.UUID(str(made)) == made  # canonical text round-trips


def test_ids_of_later_milliseconds_sort_after_earlier_ones_and_never_repeat():
    first = [uuid7() for _ in range(500)]
    time.sleep(0.002)
    second = [uuid7() for _ in range(500)]
    assert max(u.hex for u in first) < min(u.hex for u in second)  # SQLite stores the hex: its order
    assert len({*first, *second}) == 1000
    # The random part is random: ids of one millisecond do not share their low bits.
    assert len({u.int & ((1 << 62) - 1) for u in first}) == 500

"""The marker lexer's chunk invariance, and the screens that keep clean text cheap."""

from __future__ import annotations

import random

from repro.checkers.families.leaks import MarkerTails
from repro.checkers.families.lexer import AnyOf, MarkerStream, marker_pattern, read_whole

MARKERS = ("<a>", "<ab>", "</a>", "<|x|>")


class Recorder:
    def __init__(self, keep: str = "") -> None:
        self.seen: list[tuple[str, int, str, int]] = []
        self.keep = keep  # a marker kept as text (what a reader does inside a JSON string)

    def marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        self.seen.append((seg, seg_at, marker, at))
        return marker == self.keep

    def end(self, seg: str, seg_at: int) -> None:
        self.seen.append((seg, seg_at, "", -1))


def test_the_longest_marker_at_a_position_wins_and_pieces_carry_offsets() -> None:
    recorder = Recorder()
    read_whole(marker_pattern(MARKERS), "x<ab>y</a>", recorder)
    assert recorder.seen == [("x", 0, "<ab>", 1), ("y", 5, "</a>", 6), ("", 10, "", -1)]


def test_a_kept_marker_stays_in_its_segment() -> None:
    recorder = Recorder(keep="<|x|>")
    read_whole(marker_pattern(MARKERS), "a<|x|>b</a>", recorder)
    assert recorder.seen[-2] == ("a<|x|>b", 0, "</a>", 7)


def test_any_split_gives_the_pairs_of_the_whole_text() -> None:
    rng = random.Random(5)
    pieces = ["x", "<", "a", ">", "<ab>", "<|x|>", "</a>", "|", "b", "<|", "\n"]
    pattern = marker_pattern(MARKERS)
    for _ in range(500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        keep = rng.choice(("", "<a>"))
        whole = Recorder(keep)
        read_whole(pattern, text, whole)
        streamed = Recorder(keep)
        stream = MarkerStream(pattern, max(map(len, MARKERS)), streamed)
        at = 0
        while at < len(text):
            size = rng.randint(1, 4)
            stream.feed(text[at : at + size])
            at += size
        stream.finish()
        assert streamed.seen == whole.seen, text


def test_any_of_groups_by_first_character() -> None:
    screen = AnyOf([r"<\|[a-z_]+\|>", r"tool_call", r"\{\s*\"name\""])
    assert screen('see {"name": 1}')
    assert screen("x <|im_end|> y")
    assert not screen("plain text with <b> and {}")


def test_marker_tails_find_a_cut_marker_at_the_end_only() -> None:
    tails = MarkerTails(["<tool_call>", "[TOOL_CALLS]"])
    assert tails.cut_at("done <tool_ca") == 5
    assert tails.cut_at("done [TO") == 5
    assert tails.cut_at("done <tool_call> x") == -1
    assert tails.cut_at("a <") == -1  # one character is not enough to tell

from __future__ import annotations

import pytest

from harness.retrieval.chunking import WhitespaceTokenizer, chunk_markdown, knowledge_strips, markdown_sections, sentences

pytestmark = pytest.mark.unit

DOC = """# Returns Policy

Intro line.

## Return Window
Most items can be returned within 30 days of delivery. Sale items are final.

```
# not a header inside a fence
```

## Refund Methods
Refunds go to the original payment method.
"""


def test_sections_respect_headers_and_fences():
    secs = markdown_sections(DOC)
    assert [s.title for s in secs] == ["Returns Policy", "Return Window", "Refund Methods"]
    assert "# not a header" in secs[1].body


def test_chunks_carry_metadata_and_header():
    chunks = chunk_markdown(DOC, "returns.md", tokenizer=WhitespaceTokenizer())
    assert [c.metadata["section"] for c in chunks] == ["Returns Policy", "Return Window", "Refund Methods"]
    assert chunks[1].id == "returns.md#chunk_1" and chunks[1].text.startswith("## Return Window")
    assert all(c.metadata["filename"] == "returns.md" for c in chunks)


def test_long_sections_window_with_overlap_and_budget():
    body = " ".join(f"Sentence number {i} says something." for i in range(200))
    tok = WhitespaceTokenizer()
    chunks = chunk_markdown(f"## Long\n{body}", "long.md", max_tokens=60, overlap=20, tokenizer=tok)
    assert len(chunks) > 5
    assert all(len(tok.encode(c.text)) <= 60 for c in chunks)
    first, second = chunks[0].text.split(), chunks[1].text.split()
    shared = set(" ".join(first[-20:]).split(".")) & set(" ".join(second[:25]).split("."))
    assert any(s.strip() for s in shared), "consecutive chunks share trailing sentences"
    with pytest.raises(ValueError):
        chunk_markdown("x", "x.md", max_tokens=10, overlap=10)


def test_knowledge_strips_are_sentences_or_clauses():
    text = ("The return window is 30 days. Refunds are issued to the original card, and store credit is offered "
            "when the card has expired, which happens often with gift purchases made during the holiday season "
            "by customers abroad.")
    strips = knowledge_strips(text)
    assert strips[0] == "The return window is 30 days."
    assert len(strips) >= 3
    assert all(len(sentences(s)) <= 2 for s in strips)


def test_sentences_split_the_same_text_under_concurrent_callers():
    """Techniques run queries in threads: a segmenter shared between them handed one text's sentences to
    another (E3's reranker scores moved by up to 0.14, and a recorded test failed one run in four)."""
    import threading

    texts = [f"Orders at the {s} store are ready in {h} hours. Keep your order number. Call us on weekdays."
             for s, h in [("Hillcrest", 4), ("Riverside", 6), ("Oakwood", 8), ("Lakeview", 12)]] + [
        "Bank transfers clear in 72 hours. Visa is instant. " * 20]
    expected = {t: sentences(t) for t in texts}
    wrong: list[str] = []
    start = threading.Barrier(4)

    def work(offset: int) -> None:
        start.wait()
        for i in range(300):
            t = texts[(i + offset) % len(texts)]
            if sentences(t) != expected[t]:
                wrong.append(t)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong, f"{len(wrong)} of 1,200 concurrent splits differ from the text's own split"

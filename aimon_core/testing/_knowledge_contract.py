"""The contract of a KnowledgeStore: the tests every backend passes (SQLite, OpenSearch ...).

Subclass it in a pytest module (its name starting with `Test`) and return a store from
`make_store`; every call must return a store on the same data:

    class TestMyKnowledge(KnowledgeStoreContract):
        def make_store(self) -> KnowledgeStore:
            return MyStore(self.url)

The checks are plain asserts; nothing here needs pytest.
"""

from __future__ import annotations

from aimon_core.knowledge import Document, KnowledgeStore

GUIDE = """# Build

Run make to build the parser.
The parser reads tokens from the lexer.

# Deploy

Deployments go through the release pipeline.
Tag a version, then push the tag.
"""


class KnowledgeStoreContract:
    """What every KnowledgeStore does."""

    def make_store(self) -> KnowledgeStore:
        """Return a store on this test's data."""
        raise NotImplementedError

    def test_a_search_returns_the_passage_with_its_source_and_line(self) -> None:
        store = self.make_store()
        assert store.put(Document(source="docs/guide.md", text=GUIDE)) == 2
        [hit, *_] = self.make_store().search("release pipeline", 5)
        assert hit.source == "docs/guide.md" and hit.line == 6
        assert "Deployments go through the release pipeline." in hit.text

    def test_words_are_matched_by_stem_and_ranked(self) -> None:
        store = self.make_store()
        store.put(Document(source="a.md", text="The lexer splits input.\n"))
        store.put(Document(source="b.md", text="Parsers parse.\nThe parser parses tokens.\n"))
        found = store.search("parsing", 5)
        assert [p.source for p in found][:1] == ["b.md"]
        assert store.search("nothing-like-this zzzqqq", 5) == ()

    def test_putting_a_source_again_replaces_it(self) -> None:
        store = self.make_store()
        store.put(Document(source="n.md", text="old words here\n"))
        store.put(Document(source="n.md", text="new words here\n"))
        assert store.search("old", 5) == ()
        assert [p.text for p in store.search("new", 5)] == ["new words here"]

    def test_sources_and_remove(self) -> None:
        store = self.make_store()
        store.put(Document(source="b.md", text="bee\n"))
        store.put(Document(source="a.md", text="ay\n"))
        assert self.make_store().sources() == ("a.md", "b.md")
        assert store.remove("a.md") and not store.remove("a.md")
        assert store.sources() == ("b.md",)

    def test_query_syntax_is_never_an_error(self) -> None:
        store = self.make_store()
        store.put(Document(source="q.md", text='quotes " and AND OR NOT * ( ) : ^\n'))
        for query in ('"', "AND", "a OR", "*", "(", "NEAR(", "col:val", "", "   ", "^x"):
            store.search(query, 3)  # no exception, whatever the words
        assert store.search("quotes", 0) == ()

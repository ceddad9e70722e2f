"""The path query language (seed 002): grammar, parser and syntax errors.

Grammar (whitespace is allowed between any two tokens)::

    query        := entry_point (edge filter?)*
    entry_point  := semantic | exact_entity
    edge         := "-[" relation "]->"            outgoing
                  | "<-[" relation "]-"            incoming
    relation     := "*" | term ("," term)* quantifier?
    quantifier   := "*" | "*" n | "*" n ".." | "*" ".." n | "*" n ".." n     (1 <= n <= MAX_WALK_DEPTH)
    term         := bare_term | quoted
    bare_term    := one or more characters other than , [ ] " < > * and control characters,
                    containing a letter or digit; inner spaces allowed ("took place")
    filter       := "type:" (typename | quoted) | exact_entity | semantic | (nothing)
    typename     := [letters digits _ - . : /]+
    exact_entity := "@" (canonical_id | quoted)
    canonical_id := [letters digits _ : . / # + ~ % -]+    (a "-" directly before "[" ends it)
    semantic     := quoted
    quoted       := '"' (any character but " and \\, or \\" or \\\\)+ '"'

``[]`` is an error (use ``[*]``). At most :data:`MAX_PATH_HOPS` edges. A quantifier makes the edge
variable-length (``-[isa*]->``: one or more ``isa`` edges; ``*3`` exactly three; ``*2..4``; ``*2..``;
``*..4``); it ends the relation list and applies to all its terms. The wildcard takes no quantifier
(``[*2]`` would read as Cypher's "any relation, two deep" while ``[*]`` here is one edge of any relation).
What seed 002 lists as other future extensions is refused with a syntax error that says so: negation
``-[!enemy]->``, optional edges ``-[born]->?``, property filters ``type:person{…}`` and named captures
``as $w`` (a quoted term is literal: ``["!enemy"]`` is the relation named ``!enemy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bfsql.errors import InvalidArgument

__all__ = [
    "ID_CHARACTERS",
    "MAX_PATH_HOPS",
    "MAX_QUERY_LENGTH",
    "MAX_WALK_DEPTH",
    "ExactEntity",
    "Filter",
    "Hop",
    "PathQuery",
    "PathSyntaxError",
    "Quantifier",
    "Relation",
    "SemanticText",
    "TypeFilter",
    "parse_path_query",
]

MAX_PATH_HOPS = 5
"""Most edges in one query."""
MAX_QUERY_LENGTH = 2000
"""Longest query text accepted."""
MAX_WALK_DEPTH = 50
"""Deepest a variable-length edge walks: the bound of ``*`` and ``*n..``, and the largest bound one may write."""
ID_CHARACTERS = "_:./#+~%-"
"""Characters besides letters and digits allowed in an unquoted ``@id``."""
_TYPE_CHARACTERS = "_-.:/"
_TERM_STOP = ',[]"<>*'


@dataclass(frozen=True)
class SemanticText:
    """``"text"``: a semantic search (entry point) or semantic filter (after an edge)."""

    text: str
    position: int


@dataclass(frozen=True)
class ExactEntity:
    """``@id``: one entity by canonical id."""

    id: str
    position: int


@dataclass(frozen=True)
class TypeFilter:
    """``type:Name``: entities of one type (matched case-insensitively against the schema)."""

    type_name: str
    position: int


Filter = SemanticText | ExactEntity | TypeFilter


@dataclass(frozen=True)
class Quantifier:
    """``*``, ``*n``, ``*n..m``, ``*n..`` or ``*..m`` after the terms: walk the relation ``least`` to ``most`` deep."""

    least: int
    most: int | None
    """None: as deep as the walk goes (at most :data:`MAX_WALK_DEPTH`)."""
    position: int

    def describe(self) -> str:
        """The quantifier in its shortest form: ``*``, ``*3``, ``*2..``, ``*..4``, ``*2..4``."""
        if self.most is None:
            return "*" if self.least == 1 else f"*{self.least}.."
        if self.least == self.most:
            return f"*{self.least}"
        return f"*..{self.most}" if self.least == 1 else f"*{self.least}..{self.most}"


@dataclass(frozen=True)
class Relation:
    """The bracketed part of an edge: ``*`` (any relation) or fuzzy terms, with an optional quantifier."""

    terms: tuple[str, ...]
    wildcard: bool
    position: int
    quantifier: Quantifier | None = None
    """Present on a variable-length edge (``-[isa*]->``)."""

    def describe(self) -> str:
        """The inside of the brackets: ``*``, or the terms and the quantifier (``isa, partof*2..4``)."""
        if self.wildcard:
            return "*"
        return ", ".join(self.terms) + (self.quantifier.describe() if self.quantifier else "")


@dataclass(frozen=True)
class Hop:
    """One edge and the optional filter after it."""

    direction: Literal["outgoing", "incoming"]
    relation: Relation
    filter: Filter | None
    position: int

    def edge(self) -> str:
        """The edge as written in canonical form: ``-[isa]->``, ``<-[isa, partof*]-``."""
        inner = self.relation.describe()
        return f"-[{inner}]->" if self.direction == "outgoing" else f"<-[{inner}]-"


@dataclass(frozen=True)
class PathQuery:
    """A parsed query: an entry point and zero or more hops."""

    text: str
    entry: SemanticText | ExactEntity
    hops: tuple[Hop, ...]

    def describe(self) -> str:
        """The query in canonical form (one space between tokens)."""
        parts = [_show(self.entry)]
        for hop in self.hops:
            parts.append(hop.edge())
            if hop.filter is not None:
                parts.append(_show(hop.filter))
        return " ".join(parts)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _show(item: Filter) -> str:
    if isinstance(item, SemanticText):
        return _quote(item.text)
    if isinstance(item, ExactEntity):
        plain = item.id and all(c.isalnum() or c in ID_CHARACTERS for c in item.id) and "-[" not in item.id
        return "@" + (item.id if plain and not item.id.endswith("-") else _quote(item.id))
    plain = all(c.isalnum() or c in _TYPE_CHARACTERS for c in item.type_name)
    return "type:" + (item.type_name if plain else _quote(item.type_name))


class PathSyntaxError(InvalidArgument):
    """A query that does not parse; carries the 0-based ``position`` of the problem."""

    code = "path_syntax"

    def __init__(self, query: str, position: int, problem: str, hint: str = "") -> None:
        position = max(0, min(position, len(query)))
        line_start = query.rfind("\n", 0, position) + 1
        line_end = query.find("\n", position)
        line = query[line_start : line_end if line_end != -1 else len(query)]
        caret = " " * (position - line_start) + "^"
        message = f"Path query syntax error at position {position}: {problem}\n    {line}\n    {caret}"
        super().__init__(message, ("Hint: " + hint) if hint else "")
        self.position = position
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.message}\n{self.hint}".strip()


_EXAMPLE = 'Example: "BRAF" -[isa]-> type:Family <-[isa]- type:Gene'
_QUANTIFIERS = "Quantifiers: * (1 or more), *3 (exactly 3), *2..4, *2.. (2 or more), *..4 (1 to 4); then ']'."


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, problem: str, hint: str = "", position: int | None = None) -> PathSyntaxError:
        return PathSyntaxError(self.text, self.pos if position is None else position, problem, hint)

    def peek(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def char(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    # -- tokens -----------------------------------------------------------------

    def quoted(self, what: str) -> str:
        start = self.pos
        self.pos += 1  # the opening quote
        out: list[str] = []
        while True:
            if self.at_end():
                raise self.error(
                    f"unterminated {what}: the '\"' opened here is never closed.",
                    'Close it with \'"\'; write \\" for a quote inside the text.',
                    start,
                )
            c = self.text[self.pos]
            if c == "\\" and self.pos + 1 < len(self.text) and self.text[self.pos + 1] in '"\\':
                out.append(self.text[self.pos + 1])
                self.pos += 2
            elif c == '"':
                self.pos += 1
                break
            else:
                out.append(c)
                self.pos += 1
        value = "".join(out)
        if not value.strip():
            raise self.error(f"empty {what} \"\".", 'Put a name or description between the quotes: "BRAF".', start)
        return value.strip()

    def exact_entity(self) -> ExactEntity:
        start = self.pos
        self.pos += 1  # '@'
        if self.char() == '"':
            return ExactEntity(self.quoted("id"), start)
        begin = self.pos
        while not self.at_end():
            c = self.text[self.pos]
            if c == "-" and self.text.startswith("[", self.pos + 1):
                break
            if c.isalnum() or c in ID_CHARACTERS:
                self.pos += 1
            else:
                break
        if self.pos == begin:
            raise self.error(
                "expected a canonical id after '@'.",
                f"Ids are letters, digits and {' '.join(ID_CHARACTERS)}, e.g. @HGNC:BRAF; quote any other id: "
                '@"id with spaces".',
            )
        c = self.char()
        if c and not c.isspace() and not self.peek("-[") and not self.peek("<-["):
            raise self.error(
                f"unexpected character {c!r} in an id.",
                f"Unquoted ids may contain letters, digits and {' '.join(ID_CHARACTERS)}; quote any other id: "
                f'@"{self.text[begin:self.pos]}{c}…".',
            )
        return ExactEntity(self.text[begin : self.pos], start)

    def type_filter(self) -> TypeFilter:
        start = self.pos
        self.pos += len("type:")
        if self.char() == '"':
            return TypeFilter(self.quoted("type name"), start)
        begin = self.pos
        while not self.at_end() and (self.text[self.pos].isalnum() or self.text[self.pos] in _TYPE_CHARACTERS):
            if self.text[self.pos] == "-" and self.text.startswith("[", self.pos + 1):
                break
            self.pos += 1
        if self.pos == begin:
            raise self.error(
                "expected a type name after 'type:'.",
                'Write type:Gene (no space after the colon); quote names with spaces: type:"Protein Complex".',
            )
        return TypeFilter(self.text[begin : self.pos], start)

    def relation(self) -> Relation:
        open_at = self.pos - 1  # the '['
        self.skip_ws()
        if self.char() == "]":
            raise self.error("empty relation list '[]'.", "Use [*] to follow any relation, or name one: [isa].")
        if self.char() == "*":
            return self.wildcard(open_at)
        terms: list[str] = []
        while True:
            self.skip_ws()
            terms.append(self.term(open_at))
            self.skip_ws()
            quantifier = self.quantifier() if self.char() == "*" else None
            self.skip_ws()
            if self.char() == "," and quantifier is None:
                self.pos += 1
                continue
            if self.char() == "]":
                self.pos += 1
                return Relation(tuple(terms), False, open_at, quantifier)
            raise self.relation_end_error(open_at, quantifier)

    def relation_end_error(self, open_at: int, quantifier: Quantifier | None) -> PathSyntaxError:
        """What is wrong where a relation list should go on (``,``) or end (``]``)."""
        if quantifier is not None and self.char() == ",":
            return self.error(
                "a quantifier ends the relation list: it applies to all its terms.",
                "Put it after the last term: [isa, partof*] walks isa and partof edges.",
                quantifier.position,
            )
        if quantifier is not None and not self.at_end() and self.char() not in "<>[":
            return self.error(f"unexpected character {self.char()!r} after the quantifier.", _QUANTIFIERS)
        if self.at_end() or self.char() in "<>[":
            return self.error(
                "expected ']' to close the relation list opened here.", "An edge is -[term]-> or <-[term]-.", open_at
            )
        return self.error(
            f"unexpected character {self.char()!r} in a relation list.",
            "Separate terms with commas and close with ']': -[isa, partof]->; quote unusual terms: [\"a|b\"].",
        )

    def wildcard(self, open_at: int) -> Relation:
        """``[*]``: any relation, one edge (the wildcard takes no quantifier)."""
        star = self.pos
        self.pos += 1
        self.skip_ws()
        if self.char() == "*" or self.char() == "." or (self.char().isascii() and self.char().isdigit()):
            raise self.error(
                "'*' (any relation) takes no quantifier: a variable-length edge names the relations it walks.",
                "Name them: -[isa*]->, -[isa, partof*1..3]->; for any relation write one edge per hop "
                "(-[*]-> -[*]->) or use bfs_query.",
                star,
            )
        if self.char() != "]":
            raise self.error(
                "'*' must stand alone in the brackets.", "Write [*] for any relation, or list terms: [isa, partof]."
            )
        self.pos += 1
        return Relation((), True, open_at)

    def term(self, open_at: int) -> str:
        """One relation term, quoted or bare (a bare term ends at , [ ] " < > or the quantifier's '*')."""
        term_at = self.pos
        if self.char() == '"':
            return self.quoted("relation term")
        while not self.at_end() and self.text[self.pos] not in _TERM_STOP and self.text[self.pos].isprintable():
            self.pos += 1
        term = " ".join(self.text[term_at : self.pos].split())
        if not term:
            if self.char() == "*":
                raise self.error("'*' must stand alone in the brackets.", "Write [*] for any relation.", term_at)
            if self.at_end() or self.char() in "<>[":
                raise self.error(
                    "expected ']' to close the relation list.", "An edge is -[term]-> or <-[term]-.", open_at
                )
            raise self.error("empty relation term.", "Remove the extra ',' or write a term: [isa, partof].")
        if term.startswith("!"):
            raise self.error(
                f"negation ({term!r}) is a future extension of the path language, not supported.",
                "Name the relations to follow, or follow [*] and narrow the hop with a type: filter.",
                term_at,
            )
        if not any(c.isalnum() for c in term):
            raise self.error(
                f"relation term {term!r} has no letters or digits.", "Name a relation: [isa], [part of].", term_at
            )
        return term

    def number(self) -> int | None:
        """The ASCII digits here as a number, or None when there are none."""
        begin = self.pos
        while self.char().isascii() and self.char().isdigit():
            self.pos += 1
        return int(self.text[begin : self.pos]) if self.pos > begin else None

    def quantifier(self) -> Quantifier:
        """``*``, ``*n``, ``*n..``, ``*..m`` or ``*n..m``, checked: 1 <= least <= most <= MAX_WALK_DEPTH."""
        start = self.pos
        self.pos += 1  # '*'
        self.skip_ws()
        least = self.number()
        self.skip_ws()
        if not self.peek(".."):
            return self.checked(Quantifier(1, None, start) if least is None else Quantifier(least, least, start))
        self.pos += 2
        self.skip_ws()
        most = self.number()
        if least is None and most is None:
            raise self.error("'*..' gives no bound.", "Write * for one or more edges, or *..4 for one to four.", start)
        return self.checked(Quantifier(1 if least is None else least, most, start))

    def checked(self, quantifier: Quantifier) -> Quantifier:
        """The quantifier, or the error of a range that is empty, starts at 0 or goes deeper than a walk goes."""
        least, most = quantifier.least, quantifier.most
        if least == 0:
            raise self.error(
                "a variable-length edge walks at least one edge; zero-length ranges (*0..) are not supported.",
                "Start the range at 1 (*1..3); to keep the entity itself too, also run the query without the edge.",
                quantifier.position,
            )
        if max(least, most or 0) > MAX_WALK_DEPTH:
            raise self.error(
                f"a walk goes at most {MAX_WALK_DEPTH} edges deep; got {max(least, most or 0)}.",
                f"Write * (up to {MAX_WALK_DEPTH} deep) or a smaller bound: *..10.",
                quantifier.position,
            )
        if most is not None and most < least:
            raise self.error(
                f"the range *{least}..{most} is empty.", f"Write the smaller bound first: *{most}..{least}.",
                quantifier.position,
            )
        return quantifier

    def edge(self) -> tuple[Literal["outgoing", "incoming"], Relation, int]:
        start = self.pos
        incoming = self.peek("<-[")
        self.pos += 3 if incoming else 2
        relation = self.relation()
        if incoming:
            if self.peek("->"):
                raise self.error(
                    "an edge cannot point both ways ('<-[…]->').",
                    "Use -[term]-> for outgoing edges or <-[term]- for incoming ones.",
                    start,
                )
            if not self.peek("-"):
                raise self.error("expected '-' to end the incoming edge.", "An incoming edge is <-[term]-.")
            self.pos += 1
            return "incoming", relation, start
        if self.peek("->"):
            self.pos += 2
            return "outgoing", relation, start
        if self.peek("-"):
            raise self.error(
                "expected '->' to end the outgoing edge; undirected edges '-[…]-' are not supported.",
                "Use -[term]-> (outgoing) or <-[term]- (incoming).",
            )
        raise self.error("expected '->' after ']'.", "An outgoing edge is -[term]->.")

    def filter(self) -> Filter | None:
        self.skip_ws()
        if self.at_end() or self.peek("-[") or self.peek("<-["):
            return None
        if self.peek("type:"):
            return self.type_filter()
        if self.char() == "@":
            return self.exact_entity()
        if self.char() == '"':
            start = self.pos
            return SemanticText(self.quoted("text"), start)
        if self.text[self.pos :].casefold().startswith("type:"):
            raise self.error("write 'type:' in lower case.", "e.g. type:Gene.")
        if self.char() == "?":
            raise self.error("optional edges ('->?') are a future extension of the path language, not supported.",
                             "Run the query with the edge and without it.")
        raise self.error(
            f"unexpected {self.char()!r} after an edge.",
            'After an edge comes a filter (type:Name, @id or "text"), another edge, or the end. ' + _EXAMPLE,
        )

    # -- the query ----------------------------------------------------------------

    def parse(self) -> PathQuery:
        self.skip_ws()
        if self.at_end():
            raise self.error("the query is empty.", 'Start with an entry point: "name" or @id. ' + _EXAMPLE)
        entry: SemanticText | ExactEntity
        if self.char() == '"':
            start = self.pos
            entry = SemanticText(self.quoted("text"), start)
        elif self.char() == "@":
            entry = self.exact_entity()
        elif self.peek("type:"):
            raise self.error(
                "a query cannot start with a type filter.",
                'Start from an entity: "name" (semantic search) or @id, e.g. "BRAF" -[isa]-> type:Family.',
            )
        else:
            raise self.error(
                "a query starts with an entry point: \"text\" (semantic search) or @id (exact id).",
                "Quote names: \"BRAF\"; prefix ids with @: @HGNC:BRAF. " + _EXAMPLE,
            )
        hops: list[Hop] = []
        while True:
            self.skip_ws()
            if self.at_end():
                break
            if not (self.peek("-[") or self.peek("<-[")):
                c = self.char()
                if c in '"@' or self.peek("type:"):
                    problem = "two filters in a row; a filter must follow an edge."
                elif c == "{":
                    problem = "property filters ('{…}') are a future extension of the path language, not supported."
                elif self.text.startswith("as ", self.pos) or c == "$":
                    problem = "named captures ('as $name') are a future extension of the path language, not supported."
                elif self.peek("->") or self.peek("-"):
                    problem = "expected an edge: '-[' must open the relation list."
                else:
                    problem = f"unexpected {c!r}; expected an edge -[…]-> or <-[…]-."
                raise self.error(problem, "Connect positions with edges: -[term]-> or <-[term]-. " + _EXAMPLE)
            direction, relation, start = self.edge()
            hops.append(Hop(direction, relation, self.filter(), start))
            if len(hops) > MAX_PATH_HOPS:
                raise self.error(
                    f"too many edges: at most {MAX_PATH_HOPS} per query.",
                    "Split the question: run the first part, then start a new query from an @id it found.",
                    start,
                )
        return PathQuery(self.text, entry, tuple(hops))


def parse_path_query(text: str) -> PathQuery:
    """Parse a path query; :class:`PathSyntaxError` (with position and hint) when it does not parse."""
    if not isinstance(text, str):
        raise InvalidArgument("query must be a string.", _EXAMPLE)
    if len(text) > MAX_QUERY_LENGTH:
        raise InvalidArgument(
            f"query is longer than {MAX_QUERY_LENGTH} characters.", "Path queries are short chains. " + _EXAMPLE
        )
    return _Parser(text).parse()

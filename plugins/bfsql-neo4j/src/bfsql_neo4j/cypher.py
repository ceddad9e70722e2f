"""Every Cypher statement the backend sends, built once from the configuration.

Values (ids, search text, type lists) always travel as parameters. Labels and
property keys cannot be parameters in Cypher, so the configured ones are
validated and backtick-quoted here (:func:`quote_identifier`). Every statement
that reads a node starts from an index: ``(n:<label> {<id property>: id})`` (a
label + property index seek) or a full-text index procedure; none scans all
nodes. Statements only read: there is no CREATE, MERGE, SET, DELETE or CALL of a
writing procedure anywhere in this module.
"""

from __future__ import annotations

from dataclasses import dataclass

from bfsql_neo4j.dialect import Dialect, DialectName

__all__ = ["Statements", "quote_identifier"]


def quote_identifier(name: str, dialect: Dialect) -> str:
    """``name`` as a backtick-quoted Cypher identifier; ValueError if it cannot be one safely."""
    if not name or not name.strip():
        raise ValueError("an identifier must not be empty")
    if "\x00" in name:
        raise ValueError(f"identifier {name!r} contains a NUL character")
    if "`" in name:
        if not dialect.backtick_escapes:
            raise ValueError(f"identifier {name!r} contains a backtick, which {dialect.name.value} cannot escape")
        name = name.replace("`", "``")
    return f"`{name}`"


@dataclass(frozen=True)
class Statements:
    """The read statements for one graph layout and dialect."""

    dialect: Dialect
    node_label: str
    id_property: str
    name_property: str
    synonyms_property: str

    @property
    def _label(self) -> str:
        return quote_identifier(self.node_label, self.dialect)

    @property
    def _id(self) -> str:
        return quote_identifier(self.id_property, self.dialect)

    def _anchor(self, variable: str, value: str) -> str:
        return f"({variable}:{self._label} {{{self._id}: {value}}})"

    def edges(self, outgoing: bool) -> str:
        """Edges of each id in ``$ids``: rows (id, type, other); a row with null type for a node without edges.

        The far end is not label-filtered: a relationship to a node that is not an
        entity (no served label) is reported as a dangling edge, as in the contract.
        """
        pattern = "(n)-[r]->(m)" if outgoing else "(m)-[r]->(n)"
        return (
            f"UNWIND $ids AS id MATCH {self._anchor('n', 'id')} "
            f"OPTIONAL MATCH {pattern} "
            f"RETURN id, type(r) AS type, m.{self._id} AS other"
        )

    def nodes(self) -> str:
        """Labels of each id in ``$ids`` that is an entity: rows (id, labels)."""
        return f"UNWIND $ids AS id MATCH {self._anchor('n', 'id')} RETURN id, labels(n) AS labels"

    def node_properties(self) -> str:
        """Properties of each entity in ``$ids``, without the keys in ``$drop``: rows (id, props as [key, value] pairs).

        Dropped keys (the id, embeddings) are filtered on the server, so large
        vectors never cross the wire.
        """
        return (
            f"UNWIND $ids AS id MATCH {self._anchor('n', 'id')} "
            "RETURN id, [k IN keys(n) WHERE NOT k IN $drop | [k, n[k]]] AS props"
        )

    def edge_properties(self) -> str:
        """Properties of the relationships matching each ``{i, s, o, types}`` in ``$edges``.

        Rows (i, type, props as [key, value] pairs), parallel relationships ordered
        by internal id so that the first one is stable.
        """
        return (
            f"UNWIND $edges AS e MATCH {self._anchor('s', 'e.s')}-[r]->(o) "
            f"WHERE o.{self._id} = e.o AND type(r) IN e.types "
            "RETURN e.i AS i, type(r) AS type, [k IN keys(r) WHERE NOT k IN $drop | [k, r[k]]] AS props "
            f"ORDER BY i, {self.dialect.id_function}(r)"
        )

    def search(self, filter_types: bool) -> str:
        """Full-text hits for ``$query`` (best first, at most ``$limit``): rows (id, labels, name, synonyms, score).

        Neo4j 5 names the index (``$index``); FalkorDB keys its full-text indexes by
        label, so ``$index`` is the label there.
        """
        conditions = [f"node:{self._label}", f"node.{self._id} IS NOT NULL"]
        if filter_types:
            conditions.append("any(label IN labels(node) WHERE label IN $types)")
        return (
            f"CALL {self.dialect.fulltext_procedure}($index, $query) YIELD node, score "
            f"WHERE {' AND '.join(conditions)} "
            f"RETURN node.{self._id} AS id, labels(node) AS labels, "
            f"node.{quote_identifier(self.name_property, self.dialect)} AS name, "
            f"node.{quote_identifier(self.synonyms_property, self.dialect)} AS synonyms, score "
            "ORDER BY score DESC LIMIT $limit"
        )

    @staticmethod
    def labels() -> str:
        """Every node label, sorted (db.labels() reads the schema store, no scan)."""
        return "CALL db.labels() YIELD label RETURN label ORDER BY label"

    @staticmethod
    def relationship_types() -> str:
        """Every relationship type, sorted."""
        return "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType ORDER BY relationshipType"

    def indexes(self) -> str:
        """The index listing the start-up checks read."""
        if self.dialect.name is DialectName.FALKORDB:
            return (
                "CALL db.indexes() YIELD label, properties, types, entitytype "
                "RETURN label, properties, types, entitytype"
            )
        return (
            "SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties, state "
            "RETURN name, type, entityType, labelsOrTypes, properties, state"
        )

    def create_id_index(self) -> str:
        """The statement an operator runs to create the id index this backend requires."""
        if self.dialect.name is DialectName.FALKORDB:
            return f"CREATE INDEX FOR (n:{self._label}) ON (n.{self._id})"
        constraint = quote_identifier(f"{self.node_label}_{self.id_property}_unique", self.dialect)
        return f"CREATE CONSTRAINT {constraint} IF NOT EXISTS FOR (n:{self._label}) REQUIRE n.{self._id} IS UNIQUE"

    def create_fulltext_index(self, index_name: str) -> str:
        """The statement an operator runs to create the full-text index search_entities requires."""
        name = quote_identifier(self.name_property, self.dialect)
        synonyms = quote_identifier(self.synonyms_property, self.dialect)
        if self.dialect.name is DialectName.FALKORDB:
            return f"CREATE FULLTEXT INDEX FOR (n:{self._label}) ON (n.{name}, n.{synonyms})"
        index = quote_identifier(index_name, self.dialect)
        return f"CREATE FULLTEXT INDEX {index} IF NOT EXISTS FOR (n:{self._label}) ON EACH [n.{name}, n.{synonyms}]"

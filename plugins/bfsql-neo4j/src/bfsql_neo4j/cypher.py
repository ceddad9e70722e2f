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

__all__ = ["PROVENANCE_PROPERTY", "Statements", "quote_identifier"]

PROVENANCE_PROPERTY = "provenance"
"""The relationship property holding an edge's evidence records (a list, usually stored as JSON text)."""


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

    @property
    def _name(self) -> str:
        return quote_identifier(self.name_property, self.dialect)

    def hop(self, with_properties: bool = False) -> str:
        """Each id in ``$ids`` that is an entity, and every relationship of it, both directions, with its other end.

        Rows (id, relationship type, whether the id's node is its start, other end's id,
        its labels, its name, the id's node's labels, its name); a node without
        relationships gives one row whose relationship columns are null. ``with_properties``
        adds the relationship's internal id and its properties without the keys in ``$drop``
        (as in :meth:`edge_properties`). The other end is not label-filtered: a
        relationship to a node that is not an entity (no served label) is a dangling edge,
        as in the contract. No column aliases: every byte of the text counts against
        FalkorDB's message budget, which decides how many ids a statement can carry.
        """
        properties = f",{self.dialect.id_function}(r),{self._properties('r')}" if with_properties else ""
        return (
            f"UNWIND $ids AS id MATCH {self._anchor('n', 'id')} OPTIONAL MATCH (n)-[r]-(m) "
            f"RETURN id,type(r),startNode(r)=n,m.{self._id},labels(m),m.{self._name},labels(n),n.{self._name}"
            f"{properties}"
        )

    @staticmethod
    def _properties(variable: str) -> str:
        """``variable``'s properties as ``[key, value]`` pairs, without the keys in ``$drop``."""
        return f"[k IN keys({variable}) WHERE NOT k IN $drop | [k, {variable}[k]]]"

    def nodes(self) -> str:
        """Each id in ``$ids`` that is an entity: rows (id, labels, name)."""
        return (
            f"UNWIND $ids AS id MATCH {self._anchor('n', 'id')} RETURN id, labels(n) AS labels, n.{self._name} AS name"
        )

    def node_properties(self) -> str:
        """Properties of each entity in ``$ids``, without the keys in ``$drop``: rows (id, props as [key, value] pairs).

        Dropped keys (the id, embeddings) are filtered on the server, so large
        vectors never cross the wire.
        """
        return (
            f"UNWIND $ids AS id MATCH {self._anchor('n', 'id')} "
            f"RETURN id, {self._properties('n')} AS props"
        )

    def _edge_match(self) -> str:
        # Edges travel as [subject, object, relationship type] lists: FalkorDB renders maps with their keys.
        return (
            f"UNWIND $edges AS e MATCH {self._anchor('s', 'e[0]')}-[r]->(o) "
            f"WHERE o.{self._id} = e[1] AND type(r) = e[2]"
        )

    def edge_properties(self) -> str:
        """Properties of the relationships matching each ``[subject, object, type]`` of ``$edges``, minus ``$drop``.

        Rows (the asked ``[subject, object, type]``, props as [key, value] pairs), ordered
        by internal id, so that the first of parallel relationships is stable.
        """
        return (
            f"{self._edge_match()} "
            f"RETURN e, {self._properties('r')} AS props "
            f"ORDER BY {self.dialect.id_function}(r)"
        )

    def edge_provenance(self) -> str:
        """The provenance property of the relationships matching each ``[subject, object, type]`` of ``$edges``.

        Rows (the asked ``[subject, object, type]``, provenance) for relationships that
        have one, ordered by internal id as in :meth:`edge_properties`.
        """
        provenance = quote_identifier(PROVENANCE_PROPERTY, self.dialect)
        return (
            f"{self._edge_match()} AND r.{provenance} IS NOT NULL "
            f"RETURN e, r.{provenance} AS provenance ORDER BY {self.dialect.id_function}(r)"
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
            f"node.{self._name} AS name, "
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

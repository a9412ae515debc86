"""The shared module trees' node lists (``pyast.all_nodes``): ``ast.walk``'s, faster."""

from __future__ import annotations

import ast
import importlib.util
import os

from opdoctor.facts.pyast import all_nodes, parse_file


def _torch_modules() -> list[str]:
    spec = importlib.util.find_spec("torch")
    assert spec and spec.origin
    root = os.path.dirname(spec.origin)
    return [os.path.join(root, name) for name in ("_tensor.py", "library.py", "serialization.py",
                                                  "functional.py", "__init__.py")]


def test_the_nodes_are_ast_walks_in_its_order() -> None:
    """Real modules (torch's own: classes, comprehensions, f-strings, decorators, match-free
    Python 3 of every kind), whole and in parts: the same nodes, the same order."""
    for path in _torch_modules():
        tree = parse_file(path)
        assert tree is not None
        assert all_nodes(tree) == list(ast.walk(tree))
        for stmt in tree.body[:50]:
            assert all_nodes(stmt) == list(ast.walk(stmt))


def test_a_modules_list_is_kept_on_its_shared_tree() -> None:
    """Readers of one module (guards, text comparisons, registrations, the import chain)
    share one list; a subtree's is made afresh (nothing is kept on it)."""
    tree = parse_file(_torch_modules()[0])
    assert tree is not None
    assert all_nodes(tree) is all_nodes(tree)
    stmt = tree.body[0]
    assert all_nodes(stmt) == all_nodes(stmt) and all_nodes(stmt) is not all_nodes(stmt)


def test_a_cached_tree_is_freed_without_the_cyclic_collector() -> None:
    """The kept list refers to the tree, the tree not to the list: once the caches are
    emptied the tree goes by reference counting, with the collector off."""
    import gc
    import weakref

    from opdoctor.facts import commandcache

    tree = parse_file(_torch_modules()[1])
    assert tree is not None
    all_nodes(tree)
    ref = weakref.ref(tree.body[0])  # a statement node: AST nodes take weak references
    del tree
    enabled = gc.isenabled()
    gc.disable()
    try:
        commandcache.clear()
        assert ref() is None
    finally:
        if enabled:
            gc.enable()

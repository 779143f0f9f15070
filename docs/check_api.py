"""Check that the API reference covers the public API: ``python docs/check_api.py`` (exit status 1 on a gap).

It fails when

- a name in the ``__all__`` of a public module of jaxdml (no component of its dotted name starts with ``_``)
  is on no page of ``docs/api/`` (listed in an ``autosummary`` under the page's ``currentmodule``, as itself
  or as the same object under another public name: ``jaxdml.NCA`` covers ``jaxdml.estimators.NCA``); a
  module in an ``__all__`` needs an ``automodule`` directive;
- a public module has no ``__all__``, so its API is undefined (the method packages, whose modules are
  private and whose names ``jaxdml.methods`` exports, are exempt);
- a function or class in an ``__all__``, or a public method or property defined by such a class, has no
  docstring;
- a page lists a name that does not exist.

``tests/test_docs.py`` runs it as part of the default test suite; the docs CI job runs it too.
"""

import importlib
import inspect
import pathlib
import pkgutil
import re
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent

#: public packages whose modules are private and whose names another module exports
NO_ALL = ("jaxdml.methods.closed_form", "jaxdml.methods.core", "jaxdml.methods.gradient", "jaxdml.methods.ordinal",
          "jaxdml.methods.weak")


def public_modules(package):
    """The dotted names of ``package`` and of its modules that have no private component."""
    names = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


def documented_names(api_dir):
    """``(qualified names listed in autosummary tables, modules given an automodule)`` of the .rst pages."""
    names, modules = set(), set()
    for page in sorted(api_dir.glob("*.rst")):
        current, in_table = None, False
        for line in page.read_text().splitlines():
            directive = re.match(r"\.\. (currentmodule|automodule|module|autosummary)::\s*(\S*)", line)
            if directive:
                kind, arg = directive.groups()
                if kind in ("automodule", "module"):
                    modules.add(arg)
                if kind != "autosummary":
                    current = arg
                in_table = kind == "autosummary"
                continue
            if in_table:
                entry = line.strip()
                if not entry or entry.startswith(":"):
                    continue
                if not line.startswith("   "):
                    in_table = False
                    continue
                names.add(entry if current is None else f"{current}.{entry}")
    return names, modules


def resolve(qualified):
    """The object a dotted name refers to (importing the longest module prefix), or raise ``LookupError``."""
    parts = qualified.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                raise LookupError(qualified)
            obj = getattr(obj, attr)
        return obj
    raise LookupError(qualified)


def _own_members(cls):
    """``(name, function)`` of the public methods and properties a class defines itself."""
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            yield name, value.fget
        elif isinstance(value, (staticmethod, classmethod)):
            yield name, value.__func__
        elif inspect.isfunction(value):
            yield name, value


def _has_doc(obj):
    return bool((getattr(obj, "__doc__", None) or "").strip())


def check(api_dir=DOCS / "api"):
    """The list of problems (empty when the API reference covers the public API)."""
    sys.path.insert(0, str(ROOT))
    import jaxdml

    names, modules = documented_names(api_dir)
    problems, by_name = [], {}
    for qualified in sorted(names):
        try:
            by_name.setdefault(qualified.rsplit(".", 1)[-1], []).append(resolve(qualified))
        except LookupError:
            problems.append(f"docs/api lists {qualified}, which does not exist")
    checked = set()
    for module_name in public_modules(jaxdml):
        module = importlib.import_module(module_name)
        exported = getattr(module, "__all__", None)
        if exported is None:
            if module_name not in NO_ALL:
                problems.append(f"{module_name} has no __all__")
            continue
        for name in exported:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                if obj.__name__ not in modules:
                    problems.append(f"{module_name}.{name}: module {obj.__name__} has no automodule on an API page")
                continue
            if f"{module_name}.{name}" not in names and not any(obj is other for other in by_name.get(name, ())):
                problems.append(f"{module_name}.{name} is in __all__ but on no API page (docs/api/*.rst)")
            if (inspect.isclass(obj) or inspect.isroutine(obj)) and id(obj) not in checked:
                checked.add(id(obj))
                if not _has_doc(obj):
                    problems.append(f"{module_name}.{name} has no docstring")
                if inspect.isclass(obj) and obj.__module__.startswith("jaxdml"):
                    problems += [f"{module_name}.{name}.{member} has no docstring"
                                 for member, fn in _own_members(obj) if fn is not None and not _has_doc(fn)]
    return problems


def main():
    problems = check()
    for problem in problems:
        print(problem)
    print(f"check_api: {len(problems)} problem(s)" if problems else "check_api: every public name is documented")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

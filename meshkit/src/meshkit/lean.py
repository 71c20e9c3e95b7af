"""Keep a server process small: defer the imports a clawmesh server never uses.

``install()`` must run before anything imports fastmcp, mcp or uvicorn: it is the first
statement of every ``mcp_<name>.__main__.main()``. It changes *when* modules are
imported, never what they do: each stand-in below imports the real module the moment
anything but the one known import site touches it. Tests and embedded use (fastmcp
already imported) are left alone.

What it defers, and the import that would otherwise pull it in:

- ``mcp.client.*``, ``mcp.server.mcpserver.*`` (the SDK's own client and server):
  ``mcp/__init__.py`` and ``mcp/server/__init__.py`` import them to re-export names;
  here each name is resolved from its module on first use.
- fastmcp's skills providers and PyYAML: ``fastmcp/server/providers/__init__.py``.
- ``uvicorn.main`` (click CLI, reload/worker supervisors, watchfiles, multiprocessing):
  ``uvicorn/__init__.py``; ``uvicorn.main.Server`` *is* ``uvicorn.server.Server``.
- rich: ``fastmcp/utilities/logging.py`` (only for fastmcp's own log handler, which
  ``meshkit.logs`` replaces; ``FASTMCP_LOG_ENABLED=false`` skips building it).
- joserfc: ``fastmcp/server/auth/auth.py`` (JWT client assertions; not used here).
- httpx's command line (click, rich, pygments): ``httpx/__init__.py`` (its ``main`` loads
  the real module when called).
- httpx itself, for python-telegram-bot: ``telegram/_bot.py`` and ``telegram/request``
  import ``HTTPXRequest``, its default backend; telegram-io gives its bots an httpx2 one
  (``mcp_telegram_io.request``), so a ``HTTPXRequest`` is only built (and httpx loaded)
  by whoever asks for one.
- ``html.entities``: ``starlette/middleware/errors.py`` (debug error page only).
- cryptography: ``mcp/server/request_state.py`` (AES-GCM for SEP-2322 ``requestState``),
  loaded at the first seal/unseal, with ``LazyRequestStateCodec`` as the codec; and
  python-telegram-bot's Telegram Passport decryption (``telegram/_passport/credentials.py``,
  ``telegram/_bot.py``), loaded when a Bot gets a private key or decrypts Passport data.
- pydantic model builds: models defined after ``mcp_types`` (fastmcp's, the SDK's,
  the 2025-11-25/2026-07-28 wire shapes, ours) are built on first use (``defer_build``).
"""

from __future__ import annotations

import ast
import gc
import importlib
import importlib.abc
import importlib.util
import os
import sys
import types
from typing import Any

__all__ = ["LazyRequestStateCodec", "evict_startup_only", "install"]


def install() -> None:
    """Call first thing in ``main()``, before fastmcp, mcp or uvicorn are imported."""
    if "fastmcp" in sys.modules or "mcp" in sys.modules:
        return
    os.environ.setdefault("FASTMCP_LOG_ENABLED", "false")
    _lazy_callables("rich.console", ["Console"])
    _lazy_callables("rich.logging", ["RichHandler"])
    _lazy_callables("joserfc.jws", ["extract_compact"])
    _lazy_callables("httpx._main", ["main"])
    _lazy_callables("telegram.request._httpxrequest", [], classes=("HTTPXRequest",))
    _lazy_module("html")
    _lazy_module("yaml")
    _lazy_init("mcp")
    _lazy_init("mcp.server")
    _lazy_cryptography()
    import mcp_types  # noqa: F401, PLC0415  (its models serve every request: build them now)
    import pydantic  # noqa: PLC0415

    pydantic.BaseModel.model_config["defer_build"] = True
    importlib.import_module("fastmcp.server")
    _lazy_init("fastmcp.server.providers")
    _lazy_init("uvicorn")
    from uvicorn.server import Server  # noqa: PLC0415

    _lazy_module("uvicorn.main", preset={"Server": Server})


def evict_startup_only() -> None:
    """After the tools are registered: drop griffe (fastmcp parses tool docstrings with it).

    A tool registered later imports it again.
    """
    for name in [m for m in sys.modules if m == "griffe" or m.startswith("griffe.")]:
        del sys.modules[name]
    gc.collect()


class LazyRequestStateCodec:
    """``RequestStateSecurity.ephemeral()``'s AES-GCM codec, built at the first seal/unseal."""

    def __init__(self) -> None:
        self._key = os.urandom(32)
        self._codec: Any = None

    def _real(self) -> Any:
        if self._codec is None:
            from mcp.server.request_state import AESGCMRequestStateCodec  # noqa: PLC0415

            self._codec = AESGCMRequestStateCodec([self._key])
        return self._codec

    def seal(self, payload: bytes) -> str:
        return str(self._real().seal(payload))

    def unseal(self, token: str) -> bytes:
        return bytes(self._real().unseal(token))


# --- lazy package __init__s -------------------------------------------------------------


def _resolve(pkg: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    base = pkg.rsplit(".", level - 1)[0] if level > 1 else pkg
    return f"{base}.{module}" if module else base


_EXPORTS: dict[str, dict[str, tuple[str, str | None]]] = {}


def _unshadow(modname: str) -> None:
    """Loading ``pkg.child`` late binds ``pkg.child`` to the module; where ``pkg``'s
    ``__init__`` exports another object under that name (``uvicorn.main`` is a function),
    drop the binding so the export is resolved instead, as without the deferral."""
    pkg, _, child = modname.rpartition(".")
    export = _EXPORTS.get(pkg, {}).get(child)
    if export is not None and export != (modname, None) and pkg in sys.modules:
        vars(sys.modules[pkg]).pop(child, None)


def _lazy_init(pkg: str) -> None:  # noqa: PLR0915
    """Bind ``pkg`` to a module whose names (those its ``__init__`` imports) resolve on use.

    A name the ``__init__`` defines any other way runs the real ``__init__`` in place.
    """
    if pkg in sys.modules:
        return
    spec = importlib.util.find_spec(pkg)
    if spec is None or spec.origin is None or spec.loader is None:
        return
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    exports: dict[str, tuple[str, str | None]] = {}
    all_names: list[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            src = _resolve(pkg, node.module, node.level)
            for alias in node.names:
                if alias.name != "*":
                    exports[alias.asname or alias.name] = (src, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    exports[alias.asname] = (alias.name, None)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "__all__"
        ):
            all_names = list(ast.literal_eval(node.value))
    _EXPORTS[pkg] = exports
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    state = {"real": False}

    def __getattr__(name: str) -> Any:
        dunder = name.startswith("__") and name.endswith("__")
        if name in exports and not state["real"]:
            src, attr = exports[name]
            if attr is None:
                value = importlib.import_module(src)
            elif src == pkg:
                value = importlib.import_module(f"{pkg}.{attr}")
            else:
                source_module = importlib.import_module(src)
                try:
                    value = getattr(source_module, attr)
                except AttributeError:
                    value = importlib.import_module(f"{src}.{attr}")
            setattr(module, name, value)
            return value
        if not dunder:
            try:
                return importlib.import_module(f"{pkg}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{pkg}.{name}":
                    raise
        if name == "__all__" and all_names is not None:
            return all_names
        if not state["real"] and not dunder:
            state["real"] = True
            loader.exec_module(module)
            if name in module.__dict__:
                return module.__dict__[name]
            real_getattr = module.__dict__.get("__getattr__")
            if real_getattr is not None and real_getattr is not __getattr__:
                return real_getattr(name)
        raise AttributeError(f"module {pkg!r} has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    if all_names is not None:
        module.__all__ = all_names  # type: ignore[attr-defined]
    sys.modules[pkg] = module
    parent, _, child = pkg.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


# --- stand-in modules -------------------------------------------------------------------


def _lazy_callables(modname: str, names: list[str], classes: tuple[str, ...] = ()) -> None:
    """``names`` are callables that import the real module when called; ``classes`` too,
    and they answer ``isinstance`` (False until the module is loaded: nothing can be an
    instance before). Anything else imports the module at once."""
    if modname in sys.modules:
        return
    stand_in = types.ModuleType(modname)

    def real() -> types.ModuleType:
        if sys.modules.get(modname) is stand_in:
            del sys.modules[modname]
        return importlib.import_module(modname)

    def loaded(name: str) -> Any:
        module = sys.modules.get(modname)
        return None if module is None or module is stand_in else getattr(module, name)

    def make(name: str) -> Any:
        if name in classes:

            class Deferred(type):
                def __instancecheck__(cls, instance: Any) -> bool:
                    target = loaded(name)
                    return target is not None and isinstance(instance, target)

                def __subclasscheck__(cls, subclass: type) -> bool:
                    target = loaded(name)
                    return target is not None and issubclass(subclass, target)

                def __call__(cls, *args: Any, **kwargs: Any) -> Any:
                    return getattr(real(), name)(*args, **kwargs)

            return Deferred(name, (), {"__module__": modname, "__qualname__": name})

        def proxy(*args: Any, **kwargs: Any) -> Any:
            return getattr(real(), name)(*args, **kwargs)

        proxy.__name__ = proxy.__qualname__ = name
        return proxy

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(real(), name)

    for name in [*names, *classes]:
        setattr(stand_in, name, make(name))
    stand_in.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[modname] = stand_in


def _lazy_module(modname: str, preset: dict[str, Any] | None = None) -> None:
    """``import modname`` binds a stand-in; the real module runs on first attribute use.

    (importlib.util.LazyLoader does not help on 3.11: the import system reads ``__spec__``
    of a module already in sys.modules, which runs it at the next ``import`` statement.)
    """
    if modname in sys.modules:
        return
    spec = importlib.util.find_spec(modname)
    if spec is None:
        return
    is_package = spec.submodule_search_locations is not None

    class StandIn(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            # A submodule import reads the package's __path__: load the real package first.
            if (
                name.startswith("__")
                and name.endswith("__")
                and not (name == "__path__" and is_package)
            ):
                raise AttributeError(name)
            if sys.modules.get(modname) is self:
                del sys.modules[modname]
            real = importlib.import_module(modname)
            _unshadow(modname)
            return getattr(real, name)

    stand_in = StandIn(modname)
    stand_in.__dict__.update(preset or {})
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    sys.modules[modname] = stand_in


# --- cryptography, for the import sites below only -----------------------------------------

# Importer: {cryptography module: the names it imports}. Each importer gets placeholders
# that load cryptography when called; once loaded, the importer's names are the real ones.
_CRYPTO_SITES: dict[str, dict[str, tuple[str, ...]]] = {
    # mcp/server/request_state.py:22-25: AES-GCM for requestState.
    "mcp.server.request_state": {
        "cryptography.exceptions": ("InvalidTag",),
        "cryptography.hazmat.primitives.ciphers.aead": ("AESGCM",),
        "cryptography.hazmat.primitives.hashes": ("SHA256",),
        "cryptography.hazmat.primitives.kdf.hkdf": ("HKDF",),
    },
    # python-telegram-bot: Telegram Passport decryption (never used by telegram-io).
    "telegram._passport.credentials": {
        "cryptography.hazmat.backends": ("default_backend",),
        "cryptography.hazmat.primitives.asymmetric.padding": ("MGF1", "OAEP"),
        "cryptography.hazmat.primitives.ciphers": ("Cipher",),
        "cryptography.hazmat.primitives.ciphers.algorithms": ("AES",),
        "cryptography.hazmat.primitives.ciphers.modes": ("CBC",),
        "cryptography.hazmat.primitives.hashes": ("SHA1", "SHA256", "SHA512", "Hash"),
    },
    "telegram._bot": {  # Bot(private_key=...), for Passport
        "cryptography.hazmat.backends": ("default_backend",),
        "cryptography.hazmat.primitives": ("serialization",),
    },
}
_CRYPTO_MODULES = frozenset(mod for site in _CRYPTO_SITES.values() for mod in site)
_crypto_loaded = False


class _NotYetInvalidTag(Exception):
    """Placeholder: nothing can raise InvalidTag before cryptography is loaded."""


def _load_cryptography() -> None:
    global _crypto_loaded  # noqa: PLW0603
    if _crypto_loaded:
        return
    _crypto_loaded = True
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _CryptoFinder)]
    for name in _CRYPTO_MODULES:
        if isinstance(sys.modules.get(name), _CryptoStandIn):
            del sys.modules[name]
    for importer, site in _CRYPTO_SITES.items():
        module = sys.modules.get(importer)
        for modname, names in site.items():
            real = importlib.import_module(modname)
            for attr in names:
                value = getattr(real, attr, None)
                if value is None:  # a submodule (``from package import module``)
                    value = importlib.import_module(f"{modname}.{attr}")
                if module is not None:
                    setattr(module, attr, value)


class _CryptoFinder(importlib.abc.MetaPathFinder):
    """Any other import of cryptography loads the real modules first."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "cryptography" or fullname.startswith("cryptography."):
            _load_cryptography()


class _LazyCryptoModule:
    """A placeholder for a cryptography module imported by name: its attributes load it."""

    def __init__(self, modname: str) -> None:
        self._modname = modname

    def __getattr__(self, name: str) -> Any:
        _load_cryptography()
        return getattr(importlib.import_module(self._modname), name)


class _CryptoStandIn(types.ModuleType):
    """Placeholders for the known importers' own imports; the real module for anyone else."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        importer = sys._getframe(1).f_globals.get("__name__")
        if name in _CRYPTO_SITES.get(str(importer), {}).get(self.__name__, ()):
            if name == "InvalidTag":
                return _NotYetInvalidTag
            if name == "serialization":
                return _LazyCryptoModule(f"{self.__name__}.{name}")
            modname = self.__name__

            def proxy(*args: Any, **kwargs: Any) -> Any:
                _load_cryptography()
                return getattr(importlib.import_module(modname), name)(*args, **kwargs)

            proxy.__name__ = proxy.__qualname__ = name
            return proxy
        _load_cryptography()
        return getattr(importlib.import_module(self.__name__), name)


def _lazy_cryptography() -> None:
    if any(m == "cryptography" or m.startswith("cryptography.") for m in sys.modules):
        return
    for name in _CRYPTO_MODULES:
        sys.modules[name] = _CryptoStandIn(name)
    sys.meta_path.insert(0, _CryptoFinder())

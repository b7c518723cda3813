# Sourced by scripts/test.sh and scripts/benchmark.sh: `pkg_install ARGS...` installs into "$VENV" with uv (itself
# installed into the virtualenv by pip first: about 2 s), which installs the package's ~140 dependencies in about 5 s
# where pip takes about 60 s on the 2-core machine; pip where uv cannot be installed or fails, said so on stderr.
# pip's find-links (the machine's local wheels, torch's CPU build among them) are passed on: uv reads no pip.conf.
# --compile-bytecode does what pip does by default: the installed modules are compiled once, at install, so no test
# process compiles them again (nor raises, under warnings-as-errors, a third-party module's SyntaxWarning).
pkg_install() {
  if [ -z "${_PKG_UV:-}" ]; then
    _PKG_UV=none
    if "$VENV/bin/pip" install --quiet --disable-pip-version-check 'uv>=0.13,<0.14' >/dev/null 2>&1; then
      _PKG_UV="$VENV/bin/uv"
    else
      echo "install: uv could not be installed; pip installs instead" >&2
    fi
  fi
  if [ "$_PKG_UV" != none ]; then
    local links=()
    local dir
    for dir in ${PIP_FIND_LINKS:-} $("$VENV/bin/pip" config get global.find-links 2>/dev/null || true); do
      [ -d "$dir" ] && links+=(--find-links "$dir")
    done
    if "$_PKG_UV" pip install --python "$VENV/bin/python" --quiet --compile-bytecode "${links[@]}" "$@"; then
      return 0
    fi
    echo "install: uv pip install $* failed; pip installs instead" >&2
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$@"
}

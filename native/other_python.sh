#!/usr/bin/env bash
# Print an installed Python interpreter whose major.minor differs from $1 (e.g. 3.11), to build
# an extension for "another Python" honestly; print nothing when there is none.
want_not=$1
for p in python3.10 python3.12 python3.9 python3.13 \
         "$HOME"/.pyenv/versions/3.10*/bin/python3.10 "$HOME"/.pyenv/versions/3.12*/bin/python3.12 \
         /usr/bin/python3.1[0-3] /usr/local/bin/python3.1[0-3]; do
  [ -x "$(command -v "$p" 2>/dev/null)" ] || continue
  v=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
  inc=$("$p" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
  if [ "$v" != "$want_not" ] && [ -f "$inc/Python.h" ]; then command -v "$p"; exit 0; fi
done

#!/usr/bin/env bash
# The manual equivalent of opdoctor's static dependency + symbol check, as people do it today:
# ldd for the dependencies, nm -D of every dependency, and a comparison of the names.
set -u
lib=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ldd "$lib" | awk '/=> \// {print $3}' > "$tmp/deps"
xargs -r nm -D --defined-only < "$tmp/deps" 2>/dev/null | awk 'NF >= 3 {print $3}' \
  | sed 's/@.*//' | sort -u > "$tmp/defined"
nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$tmp/undefined"
comm -23 "$tmp/undefined" "$tmp/defined" | wc -l

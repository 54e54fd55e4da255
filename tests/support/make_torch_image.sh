#!/usr/bin/env bash
# Builds a container image from this machine's own files: Debian's python3 with python3-torch and
# what it imports, and the shared libraries they link, nothing else (no shell, no package
# manager). The tests that run jobs in an image use it (no outside registry is reachable here).
#
#   tests/support/make_torch_image.sh NAME[:TAG]     imports it into rootful podman as NAME:TAG
#
# Prints the image's id. Needs podman (scripts/setup.sh) and python3-torch.
set -euo pipefail
name=${1:?usage: make_torch_image.sh NAME[:TAG]}
python=/usr/bin/python3
real_python=$(readlink -f "$python")
version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
dist=/usr/lib/python3/dist-packages
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# What the program imports: the stdlib, torch and the packages torch imports at start.
files=("$real_python" "/usr/lib/python$version")
for pkg in torch numpy six.py typing_extensions.py astunparse _distutils_hack certifi; do
  [[ -e $dist/$pkg ]] && files+=("$dist/$pkg")
done
# Every shared library the interpreter and the packages' extensions load, with their links.
{
  ldd "$real_python"
  find "$dist/torch" "$dist/numpy" "/usr/lib/python$version/lib-dynload" -name '*.so*' -print0 |
    xargs -0 -n 50 ldd 2>/dev/null || true  # ldd refuses the few that are not ELF files
  # Links inside the packages to the machine's libraries (torch/lib/ -> /usr/lib/...) bring their targets.
  find "$dist/torch" "$dist/numpy" -type l -xtype f
} | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' | sort -u > "$work/libs"
while read -r lib; do
  # Each link of the chain, by its folder's real path (/lib is /usr/lib on a merged-/usr system).
  at=$lib
  for _ in 1 2 3 4 5 6 7 8; do
    at="$(readlink -f "$(dirname "$at")")/$(basename "$at")"
    # (Not again what a folder above already brings: tar would store a link to itself.)
    case $at in "$dist"/* | "/usr/lib/python$version"/*) ;; *) files+=("$at") ;; esac
    [[ -L $at ]] || break
    next=$(readlink "$at")
    [[ $next == /* ]] || next="$(dirname "$at")/$next"
    at=$next
  done
done < "$work/libs"
# The interpreter by its usual names, and the dynamic loader's links on a merged-/usr system.
mkdir -p "$work/root/usr/bin" "$work/root/tmp"
ln -s "$(basename "$real_python")" "$work/root/usr/bin/python3"
for link in bin lib lib64 sbin; do [[ -L /$link ]] && ln -s "usr/$link" "$work/root/$link"; done
printf '%s\n' "${files[@]#/}" | sort -u > "$work/list"
tar -C / -cf "$work/files.tar" --exclude='__pycache__' --exclude='*/test/*' --exclude='*/tests/*' -T "$work/list"
tar -C "$work/root" -rf "$work/files.tar" .
podman import --change 'CMD ["/usr/bin/python3"]' --change 'ENV PATH=/usr/bin:/bin' \
  --change 'ENV PYTHONDONTWRITEBYTECODE=1' "$work/files.tar" "$name" | tail -1

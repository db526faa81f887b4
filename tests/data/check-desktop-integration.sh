#!/bin/sh
# Desktop integration, as a user's system sees it: the data files validate,
# and after `meson install` into a scratch prefix and the usual cache
# updates, an .onnx file is Graft's type and Graft is its default handler.
# Usage: check-desktop-integration.sh SOURCE_DIR BUILD_DIR  (prints TAP)
set -u
src=$1
build=$2
n=0
failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/graft-desktop-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
echo "1..18"

# ok NAME COMMAND...: runs the command, its output goes to the log as TAP comments.
check () {
  name=$1; shift
  n=$((n + 1))
  if out=$("$@" 2>&1); then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name"
    failed=$((failed + 1))
  fi
  [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/# /'
}

# equals NAME EXPECTED COMMAND...: the command's stdout must be EXPECTED.
equals () {
  name=$1; expected=$2; shift 2
  n=$((n + 1))
  got=$("$@" 2>"$tmp/stderr")
  if [ "$got" = "$expected" ]; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name: expected '$expected', got '$got'"
    sed 's/^/# /' "$tmp/stderr"
    failed=$((failed + 1))
  fi
}

check "desktop-file-validate" desktop-file-validate "$src/data/org.graft.Graft.desktop"
check "appstreamcli validate --no-net" appstreamcli validate --no-net "$src/data/org.graft.Graft.metainfo.xml"
check "glib-compile-schemas --strict" glib-compile-schemas --strict --dry-run "$src/data"

dest=$tmp/dest
check "meson install --destdir" meson install -C "$build" --no-rebuild --quiet --destdir "$dest"
prefix=$(meson introspect "$build" --buildoptions | /usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
share=$dest$prefix/share

installed_files () {
  for f in "$dest$prefix/bin/graft" \
           "$share/applications/org.graft.Graft.desktop" \
           "$share/metainfo/org.graft.Graft.metainfo.xml" \
           "$share/mime/packages/org.graft.Graft.xml" \
           "$share/glib-2.0/schemas/org.graft.Graft.gschema.xml" \
           "$share/icons/hicolor/scalable/apps/org.graft.Graft.svg" \
           "$share/icons/hicolor/symbolic/apps/org.graft.Graft-symbolic.svg" \
           "$share/graft/samples/tiny-cnn.onnx"; do
    [ -f "$f" ] || { echo "missing: $f"; return 1; }
  done
}
check "install puts binary, launcher, metainfo, MIME, schema, icons and sample in place" installed_files
check "installed desktop file validates" desktop-file-validate "$share/applications/org.graft.Graft.desktop"
check "installed schema compiles" glib-compile-schemas --strict --targetdir "$tmp" "$share/glib-2.0/schemas"
check "installed graft runs" "$dest$prefix/bin/graft" --version

check "update-mime-database" update-mime-database "$share/mime"
check "update-desktop-database" update-desktop-database "$share/applications"

# Only the scratch prefix: no user or system associations may interfere.
mkdir -p "$tmp/home/data" "$tmp/home/config"
printf '\010\007\022\007pytorch' > "$tmp/model.onnx"
printf 'PK\003\004' > "$tmp/model.pt"
printf 'PK\003\004' > "$tmp/model.pt2"
printf '\074\000\000\000ET12eh00' > "$tmp/model.pte"
query () {
  env HOME="$tmp/home" XDG_DATA_HOME="$tmp/home/data" XDG_CONFIG_HOME="$tmp/home/config" \
      XDG_CONFIG_DIRS="$tmp/home/config" XDG_DATA_DIRS="$share" XDG_CURRENT_DESKTOP=GNOME \
      xdg-mime query "$@"
}
equals "xdg-mime filetype of an .onnx file" application/x-onnx query filetype "$tmp/model.onnx"
equals "xdg-mime filetype of a .pt file" application/x-pytorch query filetype "$tmp/model.pt"
equals "default handler of application/x-onnx" org.graft.Graft.desktop query default application/x-onnx
equals "default handler of application/x-pytorch" org.graft.Graft.desktop query default application/x-pytorch
equals "xdg-mime filetype of a .pt2 file" application/x-pytorch-exported-program query filetype "$tmp/model.pt2"
equals "default handler of application/x-pytorch-exported-program" org.graft.Graft.desktop \
  query default application/x-pytorch-exported-program
equals "xdg-mime filetype of a .pte file" application/x-executorch-program query filetype "$tmp/model.pte"
equals "default handler of application/x-executorch-program" org.graft.Graft.desktop \
  query default application/x-executorch-program

[ "$failed" = 0 ]

#!/usr/bin/env bash
# install.sh: installs the module SDK as the gearbox-devel RPM ships it, so
# that the spec and the out-of-tree test (tests/system/sdk_test.sh) install
# the same files the same way.
#
#   sdk/install.sh --destdir DIR --includedir /usr/include \
#     --libdir /usr/lib64 --datadir /usr/share --version 0.1.0
#
#   INCLUDEDIR/gearbox/module.h, module.hpp   the headers
#   LIBDIR/pkgconfig/gearbox.pc               Cflags, moduledir
#   DATADIR/gearbox/examples/*.c              the example modules' sources
#   LIBDIR/gearbox/modules/                   where modules go (the gearbox
#                                             package owns it)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
destdir="" includedir="" libdir="" datadir="" version=""
while (($#)); do
  case "$1" in
    --destdir) destdir=$2; shift 2 ;;
    --includedir) includedir=$2; shift 2 ;;
    --libdir) libdir=$2; shift 2 ;;
    --datadir) datadir=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for v in includedir libdir datadir version; do
  [[ -n "${!v}" ]] || { echo "install.sh: --$v is required" >&2; exit 2; }
done
prefix=$(dirname "$includedir")
install -d -m 0755 "$destdir$includedir/gearbox" "$destdir$libdir/pkgconfig" \
  "$destdir$datadir/gearbox/examples" "$destdir$libdir/gearbox/modules"
install -m 0644 "$here"/include/gearbox/module.h "$here"/include/gearbox/module.hpp \
  "$destdir$includedir/gearbox/"
install -m 0644 "$here"/examples/*.c "$destdir$datadir/gearbox/examples/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@INCLUDEDIR@|$includedir|" \
    -e "s|@MODULEDIR@|$libdir/gearbox/modules|" -e "s|@VERSION@|$version|" \
    "$here/gearbox.pc.in" > "$destdir$libdir/pkgconfig/gearbox.pc"
chmod 0644 "$destdir$libdir/pkgconfig/gearbox.pc"

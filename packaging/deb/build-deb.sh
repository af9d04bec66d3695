#!/bin/sh
# make deb: OUT/nbus_VERSION_ARCH.deb from a built nbus (the release build `make install` ships,
# the Swift runtime linked in), as mosquitto and nats-server are packaged: the binary (stripped),
# a man page per command generated from its argument parser (swift-argument-parser's
# generate-manual tool, built once from the checkout SwiftPM already has: offline), bash, zsh and
# fish completions, both systemd units (Debian paths, nbus-broker.service enabled and started the
# way debhelper does it; it binds loopback), an `nbus` system user (sysusers.d), the default file
# /etc/default/nbus-broker (a conffile), the docs, copyright and changelog.
# Usage: build-deb.sh PATH/TO/nbus OUT-FOLDER
set -eu
nbus=$1
out=$2
SWIFT=${SWIFT:-swift}
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/packaging/deb"
mkdir -p "$out"
out=$(cd "$out" && pwd)

version=$("$nbus" --version)
arch=$(dpkg --print-architecture)
# Reproducible: every date in the package is the last commit's (or now, outside git).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || true)
[ -n "$unitdir" ] || unitdir=/lib/systemd/system

work="$out/work"
stage="$work/root"
rm -rf "$work"
mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/share/man/man1" "$stage$unitdir" \
  "$stage/usr/lib/sysusers.d" "$stage/etc/default" "$stage/usr/share/doc/nbus" \
  "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
  "$stage/usr/share/fish/vendor_completions.d"

# The binary, stripped as dh_strip does (Swift's metadata lives in sections, not symbols).
install -m 0755 "$nbus" "$stage/usr/bin/nbus"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/nbus"
"$stage/usr/bin/nbus" --version >/dev/null

# Man pages: nbus.1 and one per subcommand (nbus.broker.1 ...), from `nbus --experimental-dump-help`.
argparser="$root/.build/checkouts/swift-argument-parser"
if [ ! -d "$argparser/Tools/generate-manual" ]; then
  echo "build-deb: no swift-argument-parser checkout with Tools/generate-manual at $argparser" >&2
  exit 1
fi
echo "build-deb: generate-manual (swift-argument-parser's tool, scratch path .build/generate-manual)"
"$SWIFT" build --package-path "$argparser" --scratch-path "$root/.build/generate-manual" --product generate-manual >"$work/generate-manual.log" 2>&1 \
  || { tail -n 30 "$work/generate-manual.log" >&2; exit 1; }
tool="$("$SWIFT" build --package-path "$argparser" --scratch-path "$root/.build/generate-manual" --show-bin-path)/generate-manual"
mkdir -p "$work/man"
"$tool" "$stage/usr/bin/nbus" --multi-page --date "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" \
  --authors "The NotificationBus authors" --output-directory "$work/man"
# Pages named as git's are (nbus-broker.1 for `nbus broker`: a whatis entry man-db can index, and
# `man nbus-broker`), and blank lines of the help texts as paragraph breaks (groff warns on them).
for page in "$work/man"/*.1; do
  base=$(basename "$page" .1)
  name=$(echo "$base" | tr . -)
  words=$(echo "$base" | tr . ' ')
  sed -e "s/^\.Dt [^ ]* /.Dt $(echo "$name" | tr a-z A-Z) /" \
      -e "s/^\.Nm \"$words\"\$/.Nm $name/" -e "s/^\.Nm\$/.Nm \"$words\"/" \
      -e ':a' -e 's/^\(\.Xr nbus[a-z-]*\)\./\1-/' -e 'ta' "$page" \
    | awk '{ if ($0 == "") $0 = ".Pp"; if ($0 == ".Pp" && previous == ".Pp") next; print; previous = $0 }' \
    | gzip -9n > "$stage/usr/share/man/man1/$name.1.gz"
done

# bash-completion sources the script: no interpreter line (lintian: bash-completion-with-hashbang).
"$nbus" --generate-completion-script bash | sed '1{/^#!/d}' > "$stage/usr/share/bash-completion/completions/nbus"
"$nbus" --generate-completion-script zsh > "$stage/usr/share/zsh/vendor-completions/_nbus"
"$nbus" --generate-completion-script fish > "$stage/usr/share/fish/vendor_completions.d/nbus.fish"

for unit in nbus-broker.service nbus-broker-curve.service; do
  sed -e 's|/usr/local/bin/nbus|/usr/bin/nbus|g' -e 's|/usr/local/share/doc/nbus|/usr/share/doc/nbus|g' \
    "$root/docs/$unit" > "$stage$unitdir/$unit"
  chmod 0644 "$stage$unitdir/$unit"
done
install -m 0644 "$here/nbus.sysusers" "$stage/usr/lib/sysusers.d/nbus.conf"
install -m 0644 "$root/docs/nbus-broker.default" "$stage/etc/default/nbus-broker"
install -m 0644 "$root/README.md" "$root/docs/deployment.md" "$root/docs/command-line.md" \
  "$root/docs/security.md" "$root/protocol/NBP-1.md" "$stage/usr/share/doc/nbus/"
install -m 0644 "$here/copyright" "$stage/usr/share/doc/nbus/copyright"
date_rfc=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
printf 'nbus (%s) unstable; urgency=medium\n\n  * Release %s; CHANGELOG.md in the source says what it brings.\n\n -- NotificationBus authors <nbus@notificationbus.invalid>  %s\n' \
  "$version" "$version" "$date_rfc" | gzip -9n > "$stage/usr/share/doc/nbus/changelog.gz"

# Depends from the binary's shared libraries (libzmq5, libc6, libstdc++6, libgcc-s1).
mkdir -p "$work/debian"
printf 'Source: nbus\n\nPackage: nbus\nArchitecture: any\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O -e"$stage/usr/bin/nbus" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p') \
  || { cat "$work/shlibdeps.log" >&2; exit 1; }
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; cat "$work/shlibdeps.log" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@DEPENDS@|$depends|" -e "s|@SIZE@|$size|" \
  "$here/control.in" > "$stage/DEBIAN/control"
echo /etc/default/nbus-broker > "$stage/DEBIAN/conffiles"
for script in postinst prerm postrm; do install -m 0755 "$here/$script" "$stage/DEBIAN/$script"; done
(cd "$stage" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\n' | LC_ALL=C sort | xargs md5sum) > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums" "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles"

deb="$out/nbus_${version}_${arch}.deb"
rm -f "$deb"
# xz at level 1: 21.6 MB in 9 s of CPU, where the default level 6 takes 37 s for 18.4 MB (measured
# here, 74 MB binary); DEB_COMPRESSION="-Zxz -z6" for the smaller package.
# shellcheck disable=SC2086 # the options are words
dpkg-deb --root-owner-group ${DEB_COMPRESSION:--Zxz -z1} --build "$stage" "$deb" >/dev/null
echo "$deb"

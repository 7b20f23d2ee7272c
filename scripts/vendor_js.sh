#!/usr/bin/env bash
# Copy the JavaScript the HTML book loads (widgets manager, RequireJS, MathJax) from
# node_modules/ into book/_static/vendor/, so that the built book fetches nothing from a CDN.
#
# The versions are pinned in package.json / package-lock.json.  To update:
#   npm ci && scripts/vendor_js.sh && git add book/_static/vendor
# The copied files are committed, so building the book needs no npm.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nm="$root/node_modules"
dest="$root/book/_static/vendor"

for pkg in @jupyter-widgets/html-manager requirejs mathjax; do
    if [ ! -f "$nm/$pkg/package.json" ]; then
        echo "missing $nm/$pkg: run 'npm ci' in $root first" >&2
        exit 1
    fi
done

version() { node -p "require('$nm/$1/package.json').version"; }

rm -rf "$dest"
mkdir -p "$dest/jupyter-widgets" "$dest/requirejs" "$dest/mathjax/output/chtml/fonts"

# Widgets: the AMD bundle (base + controls for ipywidgets 7 and 8 state) and the Font Awesome
# woff2 files its CSS refers to (browsers that read woff2 never ask for the other formats).
hm="$nm/@jupyter-widgets/html-manager/dist"
cp "$hm/embed-amd.js" "$hm"/*.woff2 "$dest/jupyter-widgets/"
cp "$hm/embed.js.LICENSE.txt" "$dest/jupyter-widgets/THIRD_PARTY_LICENSES.txt"

# RequireJS: embed-amd.js defines AMD modules, so require.js must load first.
cp "$nm/requirejs/require.js" "$dest/requirejs/"  # its MIT licence is in its header

# MathJax 3: the "full" TeX component bundles every TeX extension, so nothing is autoloaded
# at run time; CommonHTML output needs its woff-v2 fonts next to it.
mj="$nm/mathjax/es5"
cp "$mj/tex-chtml-full.js" "$dest/mathjax/"
cp -r "$mj/output/chtml/fonts/woff-v2" "$dest/mathjax/output/chtml/fonts/"
cp "$nm/mathjax/LICENSE" "$dest/mathjax/"

cat > "$dest/VERSIONS.txt" <<TXT
@jupyter-widgets/html-manager $(version @jupyter-widgets/html-manager)
requirejs $(version requirejs)
mathjax $(version mathjax)
TXT

du -sh "$dest"

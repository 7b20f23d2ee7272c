#!/usr/bin/env bash
# Copy the JavaScript the HTML book loads (widgets manager, RequireJS, KaTeX's stylesheet) from
# node_modules/ into book/_static/vendor/, so that the built book fetches nothing from a CDN.
#
# The versions are pinned in package.json / package-lock.json.  To update:
#   npm ci && scripts/vendor_js.sh && git add book/_static/vendor
# The copied files are committed, so building the book needs no npm.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nm="$root/node_modules"
dest="$root/book/_static/vendor"

for pkg in @jupyter-widgets/html-manager requirejs katex; do
    if [ ! -f "$nm/$pkg/package.json" ]; then
        echo "missing $nm/$pkg: run 'npm ci' in $root first" >&2
        exit 1
    fi
done

version() { node -p "require('$nm/$1/package.json').version"; }

rm -rf "$dest"
mkdir -p "$dest/jupyter-widgets" "$dest/requirejs" "$dest/katex/fonts"

# Widgets: the AMD bundle (base + controls for ipywidgets 7 and 8 state) and the Font Awesome
# woff2 files its CSS refers to (browsers that read woff2 never ask for the other formats).
hm="$nm/@jupyter-widgets/html-manager/dist"
cp "$hm/embed-amd.js" "$hm"/*.woff2 "$dest/jupyter-widgets/"
cp "$hm/embed.js.LICENSE.txt" "$dest/jupyter-widgets/THIRD_PARTY_LICENSES.txt"

# RequireJS: embed-amd.js defines AMD modules, so require.js must load first.
cp "$nm/requirejs/require.js" "$dest/requirejs/"  # its MIT licence is in its header

# KaTeX: the book's formulas are rendered to HTML when the book is built (sphinxcontrib-katex,
# with Node); a page needs only the stylesheet and its woff2 fonts.  katex.min.js and the
# auto-render extension are loaded by widgets-offline.js only if a widget's text has TeX in it.
kx="$nm/katex/dist"
cp "$kx/katex.min.css" "$kx/katex.min.js" "$kx/contrib/auto-render.min.js" "$dest/katex/"
cp "$kx"/fonts/*.woff2 "$dest/katex/fonts/"
cp "$nm/katex/LICENSE" "$dest/katex/"
# The stylesheet lists woff2, woff and ttf for each font; browsers that read woff2 never ask
# for the others, which are not copied.  font-display: swap, so that text with formulas is
# painted at once in a fallback font rather than held invisible until the fonts arrive.
sed -i -E -e 's/@font-face\{/@font-face{font-display:swap;/g' -e 's/,url\(fonts\/[^)]*\.woff\) format\("woff"\),url\(fonts\/[^)]*\.ttf\) format\("truetype"\)//g' \
  "$dest/katex/katex.min.css"

cat > "$dest/VERSIONS.txt" <<TXT
@jupyter-widgets/html-manager $(version @jupyter-widgets/html-manager)
requirejs $(version requirejs)
katex $(version katex)
TXT

du -sh "$dest"

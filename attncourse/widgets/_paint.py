"""Drawing an explorer's frames: one matplotlib figure per explorer, repainted per frame.

Figures are made with :class:`matplotlib.figure.Figure` (never pyplot, so nothing is shown
twice in a notebook) and the helpers of :mod:`attncourse.plotting`.
"""

from __future__ import annotations

import io
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ._core import DPI, Frame

__all__ = ["BAR_COLOUR", "ACCENT", "LINE_COLOURS", "Painter", "CellLabels", "Hatching", "Renderer"]

BAR_COLOUR = "#3b528b"  # a viridis blue
ACCENT = "#d62728"  # red: the "you are here" outline, visible on both ends of cividis
LINE_COLOURS = ("#440154", "#21918c")  # viridis purple and teal: apart in grey scale too


# --------------------------------------------------------------------------------------------
# Frames and painters
#
# A painter owns one matplotlib figure.  It builds the figure once (with the helpers of
# attncourse.plotting) and lays it out once, for a fixed reference view; the layout then stays.
# The artists that change from frame to frame are marked "animated": a full draw leaves them
# out, and that background (axes, tick labels, colour bars) is kept per background key, so a
# frame costs restoring the background, drawing the changed artists on it and encoding the PNG.
# Text is the slow part of a matplotlib draw, and most of the text never changes.  A frame's
# bytes do not depend on which frames were drawn before it.


class Painter:
    """One figure, built and laid out once, repainted for each frame."""

    size: Tuple[float, float] = (9.8, 3.0)
    constrained = True
    blit = True  # False: every frame is a full draw (simple figures; no animated artists needed)

    def __init__(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        # A bare Figure is not registered with pyplot, so the inline backend never shows it.
        self.fig = Figure(figsize=self.size, dpi=DPI, layout="constrained" if self.constrained else None)
        FigureCanvasAgg(self.fig)
        self.dynamic: list = []  # drawn on every frame, in this order (so keep it in z-order)
        self.cell_labels: List[CellLabels] = []  # written last, over everything
        self._backgrounds: Dict[Any, Any] = {}

    def _animate(self, *artists: Any) -> None:
        for artist in artists:
            artist.set_animated(True)
            self.dynamic.append(artist)

    def _freeze(self, reference: Any) -> None:
        """Paint ``reference``, lay the figure out for it, and keep that layout from now on."""
        self.paint(reference)
        self.fig.canvas.draw()
        self.fig.canvas.draw()  # constrained layout settles in a second pass (rotated tick labels)
        if self.constrained:
            if hasattr(self.fig, "set_layout_engine"):  # matplotlib >= 3.6
                self.fig.set_layout_engine("none")
            else:
                self.fig.set_constrained_layout(False)

    def background_key(self, view: Any) -> Any:
        """What the non-animated artists depend on (the background is redrawn when it changes)."""
        return ()

    def paint(self, view: Any) -> str:  # pragma: no cover - every painter overrides it
        """Update the artists for ``view``; return the caption (HTML)."""
        raise NotImplementedError

    def alt(self, view: Any) -> str:  # pragma: no cover - every painter overrides it
        """What the picture for ``view`` shows, in words (the ``<img>``'s alt text)."""
        raise NotImplementedError

    def frame(self, view: Any) -> Frame:
        from PIL import Image

        caption = self.paint(view)
        canvas = self.fig.canvas
        key = self.background_key(view)
        if not self.blit:
            canvas.draw()  # a figure whose artists all change: drawn whole, nothing kept
        elif key in self._backgrounds:
            canvas.restore_region(self._backgrounds[key])
        else:
            canvas.draw()  # everything but the animated artists
            self._backgrounds[key] = canvas.copy_from_bbox(self.fig.bbox)
        for artist in self.dynamic:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
        for labels in self.cell_labels:
            labels.draw(image)
        # 256 colours are plenty for these figures, and the PNG is about a third of the RGB one's
        # size: every frame of every explorer is embedded in the HTML book.
        image = image.quantize(colors=256, method=2)  # 2: Image.Quantize.FASTOCTREE (Pillow >= 9.1)
        buffer = io.BytesIO()
        image.save(buffer, format="png")
        return Frame(buffer.getvalue(), caption, self.alt(view))


_FONTS: Dict[int, Any] = {}


def _font(pixels: int):
    """matplotlib's own DejaVu Sans, as a PIL font of ``pixels`` pixels."""
    if pixels not in _FONTS:
        from matplotlib import font_manager
        from PIL import ImageFont

        _FONTS[pixels] = ImageFont.truetype(
            font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans")), pixels
        )
    return _FONTS[pixels]


class CellLabels:
    """Numbers written into the cells of a heatmap after the draw.

    The same picture as ``heatmap(..., annotate=True)``, but written with PIL: a heatmap has
    up to 36 labels that change on every frame, and matplotlib's text is the slow part of a draw.
    """

    def __init__(self, ax, fontsize: float = 8) -> None:
        self.ax = ax
        self.font = _font(round(fontsize * DPI / 72))
        self.items: list = []

    def set(
        self,
        values: np.ndarray,
        fmt: str,
        lo: float,
        hi: float,
        show: Optional[np.ndarray] = None,
        blocked: Optional[np.ndarray] = None,
        blocked_text: str = "",
    ) -> None:
        """Label cell (i, j) with ``fmt.format(values[i, j])`` where ``show``, ``blocked_text`` where "
        "``blocked``."""
        from matplotlib.colors import to_rgb

        dark, light, grey = (
            tuple(round(255 * c) for c in to_rgb(name)) for name in ("black", "white", "0.25")
        )
        self.items = []
        for (i, j), value in np.ndenumerate(values):
            if blocked is not None and blocked[i, j]:
                self.items.append((i, j, blocked_text, grey))
            elif show is None or show[i, j]:
                bright = hi > lo and (value - lo) / (hi - lo) > 0.6  # as plotting.heatmap colours its labels
                self.items.append((i, j, fmt.format(value), dark if bright else light))

    def draw(self, image) -> None:
        from PIL import ImageDraw

        if not self.ax.get_visible():
            return
        draw, height = ImageDraw.Draw(image), image.height
        for i, j, text, colour in self.items:
            x, y = self.ax.transData.transform((j, i))  # display pixels, origin at the bottom left
            draw.text((x, height - y), text, fill=colour, font=self.font, anchor="mm")


_HATCH_CELL = 12  # sub-pixels per cell side in the hatching image


def _hatch_tile() -> np.ndarray:
    """One blocked cell as ``mask_overlay`` draws it: light grey, "//" hatching, a grey edge."""
    k = _HATCH_CELL
    tile = np.ones((k, k, 4))
    tile[..., :3] = 0.85
    rows, cols = np.indices((k, k))
    lines = (rows + cols) % (k // 2) == k // 2 - 1  # rising diagonals, two per cell
    lines[0, :] = lines[:, 0] = True  # the cell's top and left edges (its neighbours draw the others)
    tile[lines, :3] = 0.5
    return tile


class Hatching:
    """Hatched blocked cells over a heatmap, as one image: far cheaper than one patch per cell."""

    def __init__(self, ax, shape: Tuple[int, int]) -> None:
        rows, cols = shape
        self.tiles = np.tile(_hatch_tile(), (rows, cols, 1))  # (rows*k, cols*k, RGBA)
        self.image = ax.imshow(
            np.zeros_like(self.tiles),
            extent=(-0.5, cols - 0.5, rows - 0.5, -0.5),
            interpolation="nearest",
            zorder=4,
        )

    def show(self, blocked: np.ndarray) -> None:
        k = _HATCH_CELL
        rgba = self.tiles.copy()
        rgba[..., 3] = np.kron(blocked.astype(float), np.ones((k, k)))  # opaque where blocked
        self.image.set_data(rgba)


def _ink_colormap():
    """White whose opacity grows with the ink: 0 (paper) clear, 1 (ink) 40 % white."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("ink", [(1.0, 1.0, 1.0, 0.0), (1.0, 1.0, 1.0, 0.4)])


class PatchMapsPainter(Painter):
    """An image beside ``n_maps`` maps over its patches, each drawn under the image's ink (translucent
    white) with its largest patch outlined (the Vision Transformer's and the captioner's explorers)."""

    def _build_maps(self, image: Any, first_map: Any, n_maps: int, extent: Tuple[float, ...]) -> None:
        axes = self.fig.subplots(1, n_maps + 1)
        self.ax_image, self.ax_maps = axes[0], list(axes[1:])
        self.picture = self.ax_image.imshow(image, cmap="gray_r", vmin=0, vmax=1)
        self.backdrops, self.overlays, self.outlines = [], [], []
        ink = _ink_colormap()
        for ax in self.ax_maps:
            # the map opaque, the digit's ink over it in translucent white: no ink hides a low weight
            self.overlays.append(ax.imshow(first_map, cmap="viridis", extent=extent))
            self.backdrops.append(ax.imshow(image, cmap=ink, vmin=0, vmax=1, extent=extent, zorder=2))
            self.outlines.append(ax.plot([], [], color=ACCENT, lw=2, zorder=3)[0])
        for ax in axes:
            ax.set_xticks([]), ax.set_yticks([])
        # the maps are compared, so they share one colour scale (set per frame), shown by one bar
        self.colorbar = self.fig.colorbar(self.overlays[0], ax=self.ax_maps, shrink=0.8, pad=0.02)
        self.colorbar.set_label("weight (one scale for every map)", fontsize=8)
        self.image_title = self.ax_image.set_title(" ", fontsize=9)
        self.map_titles = [ax.set_title(" ", fontsize=8) for ax in self.ax_maps]

    def _paint_maps(self, view: Any, box: Callable[[int, int], Tuple[float, float, float]]) -> None:
        """Show ``view.image`` and one map per ``view.maps``; ``box(row, col)`` is the outlined
        patch's ``(x0, y0, side)`` in image pixels.  Axes beyond ``len(view.maps)`` are hidden."""
        self.picture.set_data(view.image)
        top = max(max(float(np.max(grid)) for grid in view.maps), 1e-9)  # one scale: the largest cell shown
        for k, ax in enumerate(self.ax_maps):
            shown = k < len(view.maps)
            ax.set_visible(shown)
            if not shown:
                continue
            grid = view.maps[k]
            self.backdrops[k].set_data(view.image)  # the chosen image under every map
            self.overlays[k].set_data(grid)
            self.overlays[k].set_clim(0, top)
            x0, y0, side = box(*view.top_patches[k])
            self.outlines[k].set_data([x0, x0 + side, x0 + side, x0, x0], [y0, y0, y0 + side, y0 + side, y0])
            self.map_titles[k].set_text(view.titles[k])


class Renderer:
    """``renderer(**controls) -> Frame``: the pure function's view, drawn by one painter.

    The painter (and its figure) is built on the first call and reused by every later one.
    """

    def __init__(self, view: Callable[..., Any], painter: Callable[[], Painter]) -> None:
        self.view, self.make_painter = view, painter
        self._built: Optional[Painter] = None

    @property
    def painter(self) -> Painter:
        if self._built is None:
            self._built = self.make_painter()
        return self._built

    def __call__(self, **controls: Any) -> Frame:
        return self.painter.frame(self.view(**controls))

    def warm(self, settings: Iterable[dict]) -> None:
        """Draw every background these settings need, so that each later frame only repaints."""
        painter = self.painter
        if not painter.blit:  # nothing is kept between frames: nothing to draw ahead
            return
        for controls in settings:
            view = self.view(**controls)
            if painter.background_key(view) not in painter._backgrounds:
                painter.frame(view)

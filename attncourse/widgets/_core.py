"""The explorer: controls above a picture, in frames mode (precomputed) or live mode (redrawn).

An explorer is a list of :class:`Control` and a renderer, ``render(**values) -> Frame``.

``"frames"``
    Every picture for every combination of the controls' values is drawn once, up front; the
    pictures sit in ``Stack`` widgets (nested, one level per control) whose ``selected_index``
    is ``jslink``-ed to its control.  Switching frames happens in the browser, so it works in
    the HTML book with no kernel (the notebook's saved widget state holds the frames) and is
    instant in Jupyter too.  Needs ipywidgets 8 (``Stack``).
``"live"``
    One picture redrawn by a Python callback when a control moves: for ipywidgets 7 (Colab),
    which has no ``Stack``.  ``Explorer.redraw_ms`` records how long each redraw took.
``"auto"`` (default)
    ``"frames"`` with ipywidgets 8 or later, ``"live"`` before.

A control may depend on the ones before it (:class:`DependentControl`: e.g. which head, out of
as many as the head-count control gives): in frames mode each setting of the controls it depends
on gets its own widget, inside the Stack child for that setting; in live mode one widget changes
its options.  A picture is an ``<img>`` with alt text in an ``HTML`` widget (ipywidgets' own
``Image`` renders no ``alt``), so screen readers can say what each frame shows.
"""

from __future__ import annotations

import base64
import html
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import ipywidgets as widgets

from ..i18n import tr

__all__ = [
    "DPI",
    "MODES",
    "Frame",
    "Control",
    "DependentControl",
    "Explorer",
    "ipywidgets_major",
    "resolve_mode",
    "caption",
]

DPI = 70  # small PNGs: every frame of every explorer is embedded in the HTML book
MODES = ("auto", "frames", "live")
_SLIDER_WIDTH = "380px"


@dataclass(frozen=True)
class Frame:
    """One picture an explorer can show: PNG bytes, a caption (HTML) with its numbers, alt text."""

    png: bytes
    caption: str
    alt: str = ""

    def img_html(self) -> str:
        """The picture as an ``<img>`` with a data URI and its alt text."""
        data = base64.b64encode(self.png).decode("ascii")
        alt = html.escape(self.alt, quote=True)
        return f'<img class="attncourse-picture" src="data:image/png;base64,{data}" alt="{alt}">'


def caption(*parts: str) -> str:
    """A caption's HTML: one line per part."""
    return '<div class="attncourse-caption">' + "<br>".join(parts) + "</div>"


def ipywidgets_major() -> int:
    """The installed ipywidgets' major version (7 in older Colab, 8 in current Jupyter)."""
    return int(widgets.__version__.split(".")[0])


def resolve_mode(mode: str = "auto") -> str:
    """``"frames"`` or ``"live"``: what ``mode`` means with the installed ipywidgets."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}.")
    if mode == "auto":
        return "frames" if ipywidgets_major() >= 8 else "live"
    if mode == "frames" and not hasattr(widgets, "Stack"):
        raise ValueError(
            "mode='frames' needs ipywidgets 8 or later (for Stack); this is ipywidgets "
            f"{widgets.__version__}. "
            "Use mode='live'."
        )
    return mode


@dataclass(frozen=True)
class Control:
    """One control of an explorer: the keyword it sets, its label, the values it offers.

    ``kind`` is ``"int"`` (an ``IntSlider``; values must be ``0, 1, ..., n - 1``),
    ``"select"`` (a ``SelectionSlider``), ``"toggle"`` (``ToggleButtons``) or ``"text"`` (a
    ``Text`` box, live mode only: ``parse`` turns what the reader typed into the value, and
    ``values`` holds the starting value only).  ``labels`` are the option labels shown
    (default: the values).  The label is also the control's accessible name.
    """

    name: str
    label: str
    values: Tuple[Any, ...]
    default: Any
    kind: str = "select"
    labels: Optional[Tuple[str, ...]] = None
    parse: Optional[Callable[[str], Any]] = None

    def __post_init__(self) -> None:
        if self.kind not in ("int", "select", "toggle", "text"):
            raise ValueError(
                f"{self.name}: kind must be 'int', 'select', 'toggle' or 'text'; got {self.kind!r}."
            )
        if self.default not in self.values:
            raise ValueError(f"{self.name}: default {self.default!r} is not one of {self.values}.")
        if self.kind == "int" and tuple(self.values) != tuple(range(len(self.values))):
            raise ValueError(f"{self.name}: an 'int' control's values must be 0..n-1; got {self.values}.")
        if self.kind == "text" and self.parse is None:
            raise ValueError(f"{self.name}: a 'text' control needs parse.")

    @property
    def default_index(self) -> int:
        return list(self.values).index(self.default)

    @property
    def linked_trait(self) -> str:
        """The trait whose number is the frame index: ``value`` for an IntSlider, else ``index``."""
        return "value" if self.kind == "int" else "index"

    @property
    def option_labels(self) -> Tuple[str, ...]:
        return self.labels or tuple(f"{v:g}" if isinstance(v, float) else str(v) for v in self.values)

    def options(self) -> List[Tuple[str, Any]]:
        return list(zip(self.option_labels, self.values))

    def read(self, widget: widgets.Widget) -> Any:
        """The value the widget holds (a text box's text, parsed)."""
        return self.parse(widget.value) if self.kind == "text" else widget.value

    def make_widget(self) -> widgets.Widget:
        common = {"description": self.label, "style": {"description_width": "initial"}}
        if self.kind == "int":
            widget = widgets.IntSlider(
                value=self.default,
                min=0,
                max=len(self.values) - 1,
                step=1,
                continuous_update=True,
                layout=widgets.Layout(width=_SLIDER_WIDTH),
                **common,
            )
        elif self.kind == "select":
            widget = widgets.SelectionSlider(
                options=self.options(),
                value=self.default,
                continuous_update=True,
                layout=widgets.Layout(width=_SLIDER_WIDTH),
                **common,
            )
        elif self.kind == "toggle":
            widget = widgets.ToggleButtons(
                options=self.options(),
                value=self.default,
                description=self.label,
                style={"description_width": "initial", "button_width": "auto"},
            )
        else:
            widget = widgets.Text(
                value=self.option_labels[self.default_index],
                continuous_update=False,
                layout=widgets.Layout(width="460px"),
                **common,
            )
        widget.add_class(f"attncourse-control-{self.name}")
        return widget


@dataclass(frozen=True)
class DependentControl:
    """A control whose values depend on the controls before it: ``make(values_so_far) -> Control``."""

    name: str
    make: Callable[[Dict[str, Any]], Control]


AnyControl = Union[Control, DependentControl]


def _picture(frame: Frame) -> widgets.Widget:
    box = widgets.VBox([widgets.HTML(frame.img_html()), widgets.HTML(frame.caption)])
    box.add_class("attncourse-frame")
    return box


class Explorer(widgets.VBox):
    """Controls above a picture; ``mode`` ``"frames"`` (precomputed) or ``"live"`` (redrawn).

    Parameters
    ----------
    name : str
        Short name, also a CSS class (``attncourse-<name>``) on the box.
    controls : sequence of Control or DependentControl
        One or more controls; in frames mode each adds one level of nested ``Stack``.
    render : callable
        ``render(**{control.name: value, ...}) -> Frame``.  If it has a ``warm(settings)``
        method, live mode calls it with every setting first (the explorers' renderers draw the
        figures' static backgrounds then, so that a redraw only repaints what changes).
    alt : str
        A one-line description of the explorer, for the notebook's alt text (``Explorer.alt``).
    mode : {"auto", "frames", "live"}

    Attributes
    ----------
    controls : dict of str to widget
        The widget of each control (in frames mode, a dependent control's widget for the
        controls' default setting; ``control_widgets`` lists all of them).
    mode : str
        ``"frames"`` or ``"live"``.
    frames : dict of tuple to Frame
        Frames mode: every frame, keyed by the controls' values in order.
    links : list
        Frames mode: the ``jslink`` objects, control trait -> ``Stack.selected_index``.
    redraw_ms : list of float
        Live mode: how long each redraw took (render, encode, hand to the widget), in ms.
    """

    def __init__(
        self,
        name: str,
        controls: Sequence[AnyControl],
        render: Callable[..., Frame],
        *,
        alt: str = "",
        mode: str = "auto",
    ) -> None:
        super().__init__()
        self.name = name
        self.mode = resolve_mode(mode)
        self.control_specs: Tuple[AnyControl, ...] = tuple(controls)
        if not self.control_specs:
            raise ValueError("an explorer needs at least one control")
        self.render = render
        self.alt = alt
        self.controls: Dict[str, widgets.Widget] = {}
        self.control_widgets: Dict[str, List[widgets.Widget]] = {c.name: [] for c in self.control_specs}
        self.frames: Dict[Tuple[Any, ...], Frame] = {}
        self.links: List[Any] = []
        self.redraw_ms: List[float] = []
        self.stack: Optional[widgets.Widget] = None
        self.picture: Optional[widgets.HTML] = None
        self.caption: Optional[widgets.HTML] = None
        self._current: Dict[str, Control] = {}
        self._updating = False
        top = [c for c in self.control_specs if isinstance(c, Control)]
        if self.mode == "frames" and any(c.kind == "text" for c in top):
            raise ValueError(f"{name}: a 'text' control works in live mode only.")
        if self.mode == "frames":
            for spec in top:
                self.controls[spec.name] = self._widget(spec)
            display = self.stack = self._build_frames(0, {}, True)
        else:
            display = self._build_live()
        self.children = [widgets.VBox([self.controls[c.name] for c in top]), display]
        self.add_class("attncourse-explorer")
        self.add_class(f"attncourse-{name}")

    def __repr__(self) -> str:  # short and deterministic, for the notebook's text/plain output
        names = ", ".join(c.name for c in self.control_specs)
        return f"<{self.name} explorer: {names}>"

    @property
    def specs(self) -> Tuple[Control, ...]:
        """The controls at the current setting (a dependent one made for the values before it)."""
        values, so_far, specs = self.values(), {}, []
        for c in self.control_specs:
            specs.append(self._spec(c, so_far))
            so_far[c.name] = values.get(c.name)
        return tuple(specs)

    def default_values(self) -> Dict[str, Any]:
        """Every control at its default (a dependent control's default for the others' defaults)."""
        values: Dict[str, Any] = {}
        for c in self.control_specs:
            values[c.name] = self._spec(c, values).default
        return values

    def settings(self) -> Iterator[Dict[str, Any]]:
        """Every combination of the controls' values, in frame order."""

        def walk(i: int, values: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
            if i == len(self.control_specs):
                yield dict(values)
                return
            spec = self._spec(self.control_specs[i], values)
            for value in spec.values:
                yield from walk(i + 1, {**values, spec.name: value})

        return walk(0, {})

    def values(self) -> Dict[str, Any]:
        """The controls' current values, by name (in frames mode, along the shown Stacks)."""
        if self.mode == "live":
            return {name: self._current[name].read(w) for name, w in self.controls.items()}
        values: Dict[str, Any] = {}
        node = self.stack
        for c in self.control_specs:
            spec = self._spec(c, values)
            if isinstance(c, DependentControl):
                widget, node = node.children
            else:
                widget = self.controls[c.name]
            values[c.name] = spec.read(widget)
            node = node.children[node.selected_index] if node.selected_index is not None else None
            if node is None:
                break
        return values

    def control_widget(self, name: str) -> widgets.Widget:
        """The widget of control ``name`` on screen now (in frames mode, a dependent control's
        widget for the Stack child shown; without a browser, follow the links first)."""
        if self.mode == "live" or not isinstance(self._control(name), DependentControl):
            return self.controls[name]
        node = self.stack
        for c in self.control_specs:
            if isinstance(c, DependentControl):
                widget, node = node.children
                if c.name == name:
                    return widget
            node = node.children[node.selected_index]
        raise KeyError(name)  # pragma: no cover - every name is a control's

    def _control(self, name: str) -> AnyControl:
        return next(c for c in self.control_specs if c.name == name)

    @staticmethod
    def _spec(control: AnyControl, values: Dict[str, Any]) -> Control:
        return control.make(values) if isinstance(control, DependentControl) else control

    def _widget(self, spec: Control) -> widgets.Widget:
        widget = spec.make_widget()
        self.control_widgets[spec.name].append(widget)
        return widget

    # -- frames: nested Stacks, one level per control ----------------------------------------

    def _build_frames(self, i: int, values: Dict[str, Any], on_default_path: bool) -> widgets.Widget:
        control = self.control_specs[i]
        spec = self._spec(control, values)
        dependent = isinstance(control, DependentControl)
        widget = self._widget(spec) if dependent else self.controls[spec.name]
        if dependent and on_default_path:
            self.controls[spec.name] = widget
        children = []
        for j, value in enumerate(spec.values):
            here = {**values, spec.name: value}
            default_path = on_default_path and j == spec.default_index
            if i + 1 < len(self.control_specs):
                children.append(self._build_frames(i + 1, here, default_path))
            else:
                frame = self.frames[tuple(here.values())] = self.render(**here)
                children.append(_picture(frame))
        stack = widgets.Stack(children=children, selected_index=spec.default_index)
        stack.add_class("attncourse-frames")
        # Runs in the browser, so the HTML book switches frames without a kernel.
        self.links.append(widgets.jslink((widget, spec.linked_trait), (stack, "selected_index")))
        if dependent:  # its own widget sits above the frames it switches
            box = widgets.VBox([widget, stack])
            box.add_class("attncourse-dependent")
            return box
        return stack

    # -- live: one picture, redrawn from Python ---------------------------------------------

    def _build_live(self) -> widgets.Widget:
        values: Dict[str, Any] = {}
        for c in self.control_specs:
            spec = self._current[c.name] = self._spec(c, values)
            self.controls[c.name] = self._widget(spec)
            values[c.name] = spec.default
        warm = getattr(self.render, "warm", None)
        if warm is not None:  # backgrounds first: then no redraw has to lay out or draw tick labels
            warm(s for s in self.settings() if all(self._current[n].kind != "text" for n in s))
        frame = self.render(**self.values())
        self.picture = widgets.HTML(frame.img_html())
        self.caption = widgets.HTML(frame.caption)
        self._alt = frame.alt
        for widget in self.controls.values():
            widget.observe(self._redraw, names="value")
        box = widgets.VBox([self.picture, self.caption])
        box.add_class("attncourse-live")
        return box

    def _refresh_dependents(self) -> None:
        """Give each dependent control the options the controls before it now allow."""
        values: Dict[str, Any] = {}
        for c in self.control_specs:
            widget = self.controls[c.name]
            if isinstance(c, DependentControl):
                spec = self._spec(c, values)
                if spec != self._current[c.name]:
                    old = widget.value
                    self._current[c.name] = spec
                    if spec.kind == "int":
                        widget.max = len(spec.values) - 1
                        widget.value = old if old in spec.values else spec.default
                    else:
                        widget.options = spec.options()
                        widget.value = old if old in spec.values else spec.default
            values[c.name] = self._current[c.name].read(widget)

    def _redraw(self, change: Optional[dict] = None) -> None:
        if self._updating:
            return
        start = time.perf_counter()
        self._updating = True
        try:
            try:
                self._refresh_dependents()
                frame = self.render(**self.values())
            except ValueError as error:  # e.g. scores typed in a text box that do not parse
                self.caption.value = caption(tr("<b>Not drawn:</b> {error}", error=html.escape(str(error))))
                return
        finally:
            self._updating = False
        self.picture.value = frame.img_html()
        self.caption.value = frame.caption
        self._alt = frame.alt
        self.redraw_ms.append((time.perf_counter() - start) * 1000.0)

    # -- what is on screen -----------------------------------------------------------------

    def shown(self) -> Frame:
        """The frame on screen now: the live picture, or the Stacks' selected frame.

        In frames mode the Stacks follow the controls through ``jslink``, i.e. in the browser;
        without a front end (in tests), copy each link's source trait to its target first.
        """
        if self.mode == "live":
            return self._frame_of(self.picture.value, self.caption.value)
        node = self.stack
        while not (isinstance(node, widgets.VBox) and "attncourse-frame" in node._dom_classes):
            if isinstance(node, widgets.Stack):
                node = node.children[node.selected_index]
            else:  # a dependent control's box: [widget, Stack]
                node = node.children[1]
        picture, text = node.children
        return self._frame_of(picture.value, text.value)

    @staticmethod
    def _frame_of(img_html: str, caption_html: str) -> Frame:
        src = img_html.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0]
        alt = html.unescape(img_html.split('alt="', 1)[1].split('"', 1)[0])
        return Frame(base64.b64decode(src), caption_html, alt)

    def frame_bytes(self) -> int:
        """Total PNG bytes of the precomputed frames (0 in live mode)."""
        return sum(len(f.png) for f in self.frames.values())

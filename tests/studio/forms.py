"""Read a page's form back as a browser would post it (stdlib HTML parser, no extra dependency)."""

from html.parser import HTMLParser


class _FormReader(HTMLParser):
    def __init__(self, form_class: str):
        super().__init__()
        self.form_class = form_class
        self.inside = False
        self.data: dict[str, list[str]] = {}
        self._select: str | None = None
        self._selected = False
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and self.form_class in (a.get("class") or "").split():
            self.inside = True
        if not self.inside or "disabled" in a:
            return
        name = a.get("name")
        if tag == "input" and name:
            if a.get("type") in ("checkbox", "radio"):
                if "checked" in a:
                    self.data.setdefault(name, []).append(a.get("value") or "on")
            elif a.get("type") not in ("submit", "button"):
                self.data[name] = [a.get("value") or ""]
        elif tag == "select" and name:
            self._select, self._selected = name, False
            self.data[name] = [""]
        elif tag == "option" and self._select:
            if "selected" in a and not self._selected:
                self.data[self._select] = [a.get("value") or ""]
                self._selected = True
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea" and self._textarea:
            self.data[self._textarea] = ["".join(self._text).removeprefix("\n")]
            self._textarea = None

    def handle_data(self, data):
        if self._textarea:
            self._text.append(data)


def form_data(html: str, form_class: str) -> dict:
    """Field name -> value (or list of values for checkboxes) of the form with `form_class`."""
    reader = _FormReader(form_class)
    reader.feed(html)
    return {
        k: v if len(v) > 1 or k.startswith("allowed_pools") else v[0]
        for k, v in reader.data.items()
    }

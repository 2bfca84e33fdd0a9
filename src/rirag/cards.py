"""Render model and dataset cards from the Jinja templates in ``model_cards/`` (YAML front matter + Markdown)."""

from __future__ import annotations

from pathlib import Path

#: The templates live at the repository root (recipes run from a checkout with an editable install).
TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "model_cards"


def render_card(template: str, templates_dir: str | Path | None = None, **context) -> str:
    import jinja2

    folder = Path(templates_dir) if templates_dir else TEMPLATES_DIR
    if not (folder / template).exists():
        raise FileNotFoundError(f"card template not found: {folder / template}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(template).render(**context)

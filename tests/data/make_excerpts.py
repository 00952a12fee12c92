"""Regenerate the small public-domain excerpts in tests/data from ../shared/data/gutenberg.

Only Project Gutenberg books (public domain in the USA) are used; see tests/data/README.md.
Run from the project root: python tests/data/make_excerpts.py
"""
import json
import random
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "shared" / "data" / "gutenberg"
OUT = Path(__file__).resolve().parent

PROSE = [  # (file, year) 19th/20th-century prose
    "pg46_dickens_christmas_carol.txt", "pg35_wells_time_machine.txt", "pg43_stevenson_jekyll_and_hyde.txt",
    "pg219_conrad_heart_of_darkness.txt", "pg209_james_h_turn_of_the_screw.txt", "pg244_doyle_study_in_scarlet.txt",
    "pg308_jerome_three_men_in_a_boat.txt", "pg105_austen_persuasion.txt", "pg24_cather_o_pioneers.txt",
    "pg32_gilman_herland.txt", "pg90_burroughs_son_of_tarzan.txt", "pg36_wells_war_of_the_worlds.txt",
]
MODERN = {"pg24_cather_o_pioneers.txt", "pg32_gilman_herland.txt", "pg90_burroughs_son_of_tarzan.txt"}
BOOKS = [  # document-level excerpts
    "pg11_carroll_alice_in_wonderland.txt", "pg12_carroll_through_the_looking_glass.txt", "pg16_barrie_peter_pan.txt",
    "pg41_irving_legend_of_sleepy_hollow.txt", "pg45_montgomery_anne_of_green_gables.txt", "pg60_orczy_scarlet_pimpernel.txt",
    "pg74_twain_tom_sawyer.txt", "pg76_twain_huckleberry_finn.txt", "pg84_shelley_frankenstein.txt",
    "pg94_cather_alexanders_bridge.txt", "pg95_hope_prisoner_of_zenda.txt", "pg98_dickens_tale_of_two_cities.txt",
    "pg158_austen_emma.txt", "pg160_chopin_the_awakening.txt", "pg165_norris_mcteague.txt", "pg345_stoker_dracula.txt",
    "pg384_burnett_lost_prince.txt", "pg768_bronte_e_wuthering_heights.txt", "pg514_alcott_little_women.txt",
    "pg2701_melville_moby_dick.txt",
]


def body(name: str) -> str:
    t = (SRC / name).read_text(encoding="utf-8-sig").replace("\r\n", "\n")
    s = re.search(r"^\*\*\* ?START OF.*$", t, re.M).end() + 1
    e = re.search(r"^\*\*\* ?END OF", t, re.M).start()
    return t[s:e]


def paragraphs(text: str, lo=40, hi=120):
    out = []
    for p in re.split(r"\n\s*\n", text):
        p = " ".join(p.split())
        n = len(p.split())
        if lo <= n <= hi and not p.isupper() and "gutenberg" not in p.lower() and "CHAPTER" not in p:
            out.append(p)
    return out


def main():
    rng = random.Random(0)
    rows = []
    for f in PROSE:
        ps = paragraphs(body(f))
        rng.shuffle(ps)
        for p in ps[:70]:
            rows.append({"text": p, "source": f, "modern": f in MODERN})
    with open(OUT / "paragraphs.jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    # Paradise Lost (1667) in 8-line verse chunks
    lines = [ln.strip() for ln in body("pg20_milton_paradise_lost.txt").split("\n") if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("BOOK", "THE ARGUMENT")) and len(ln) > 20]
    chunks = [" ".join(lines[i:i + 6]) for i in range(200, len(lines) - 6, 6)]
    rng.shuffle(chunks)
    with open(OUT / "verse.jsonl", "w") as fh:
        for c in chunks[:150]:
            fh.write(json.dumps({"text": c, "source": "pg20_milton_paradise_lost.txt"}, ensure_ascii=False) + "\n")
    for f in BOOKS:
        b = body(f)
        start = len(b) // 3
        start = b.index("\n\n", start) + 2
        (OUT / "books" / f).write_text(b[start:start + 12000].strip() + "\n", encoding="utf-8")
    (OUT / "pg71_thoreau_civil_disobedience.txt").write_bytes((SRC / "pg71_thoreau_civil_disobedience.txt").read_bytes())


if __name__ == "__main__":
    main()

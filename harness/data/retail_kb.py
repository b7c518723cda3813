"""A deterministic, seedable synthetic retail support knowledge base for the E2-E4 study.

100 Markdown pages (10 categories x 10 subjects), each with real headers and facts whose values
differ between pages; `structure.json` (SRS §4.2); and about 150 evaluation queries (SRS §4.1):
direct (one page), multi_hop (two pages) and negative (not answerable from the KB).
`generate(out_dir, seed)` writes the same bytes for the same seed.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Fact:
    section: str
    sentence: str  # uses {subject} / {Subject} and {v}
    values: tuple[Any, ...]
    question: str
    answer: str  # uses {v}


@dataclass(frozen=True)
class Category:
    key: str
    title: str
    subjects: tuple[str, ...]
    facts: tuple[Fact, ...]
    absent: tuple[str, ...]  # subjects the KB does not cover (for negative queries)


CATEGORIES: tuple[Category, ...] = (
    Category("returns_refunds", "Returns and Refunds",
             ("electronics", "furniture", "clothing", "toys", "books", "appliances", "jewelry", "sports gear",
              "beauty products", "groceries"),
             (Fact("Return Window", "{Subject} can be returned within {v} days of delivery.", (14, 15, 21, 30, 45, 60, 90),
                   "How many days do I have to return {subject}?", "{v} days"),
              Fact("Restocking Fee", "A restocking fee of {v}% applies to opened {subject}.", (0, 5, 10, 15, 20, 25),
                   "What is the restocking fee for opened {subject}?", "{v}%"),
              Fact("Refund Timing", "Refunds for {subject} are issued within {v} business days after inspection.",
                   (3, 5, 7, 10, 14), "How long do refunds for {subject} take?", "{v} business days")),
             ("motorcycles", "live plants", "concert tickets")),
    Category("shipping", "Shipping",
             ("the Northeast", "the Southeast", "the Midwest", "the Southwest", "the West Coast", "Alaska", "Hawaii",
              "Canada", "Mexico", "Puerto Rico"),
             (Fact("Standard Delivery", "Standard shipping to {subject} takes {v} business days.", (2, 3, 4, 5, 6, 7, 9),
                   "How long does standard shipping to {subject} take?", "{v} business days"),
              Fact("Express Delivery", "Express shipping to {subject} costs ${v}.", ("9.99", "14.99", "19.99", "24.99", "29.99"),
                   "How much does express shipping to {subject} cost?", "${v}"),
              Fact("Free Shipping Threshold", "Orders shipped to {subject} over ${v} ship free.", (35, 49, 50, 75, 99),
                   "What order value ships free to {subject}?", "over ${v}")),
             ("Antarctica", "the Moon", "Greenland")),
    Category("payments", "Payments",
             ("Visa", "Mastercard", "American Express", "PayPal", "Apple Pay", "Google Pay", "bank transfer",
              "store credit", "Klarna", "cash on delivery"),
             (Fact("Processing Time", "{Subject} payments are processed within {v} hours.", (1, 2, 6, 12, 24, 48, 72),
                   "How quickly are {subject} payments processed?", "within {v} hours"),
              Fact("Order Limit", "The maximum single order paid with {subject} is ${v}.", (500, 1000, 2500, 5000, 10000),
                   "What is the maximum order I can pay with {subject}?", "${v}"),
              Fact("Refund Channel", "Refunds to {subject} appear within {v} days.", (1, 3, 5, 7, 10),
                   "How long do refunds to {subject} take to appear?", "{v} days")),
             ("Bitcoin", "personal cheques", "Venmo")),
    Category("accounts", "Accounts",
             ("basic accounts", "premium accounts", "business accounts", "student accounts", "family accounts",
              "senior accounts", "employee accounts", "partner accounts", "guest checkout", "military accounts"),
             (Fact("Password Reset", "Password reset links for {subject} expire after {v} minutes.", (10, 15, 30, 60, 120),
                   "When do password reset links for {subject} expire?", "after {v} minutes"),
              Fact("Order History", "{Subject} keep order history for {v} months.", (6, 12, 18, 24, 36),
                   "How long is order history kept for {subject}?", "{v} months"),
              Fact("Member Discount", "{Subject} receive a {v}% member discount.", (0, 2, 5, 10, 15),
                   "What member discount do {subject} receive?", "{v}%")),
             ("celebrity accounts", "joint bank accounts", "crypto wallets")),
    Category("warranty", "Warranty",
             ("laptops", "smartphones", "televisions", "headphones", "refrigerators", "washing machines", "cameras",
              "tablets", "smartwatches", "game consoles"),
             (Fact("Coverage Period", "{Subject} carry a {v}-month limited warranty.", (6, 12, 18, 24, 36),
                   "How long is the warranty on {subject}?", "{v} months"),
              Fact("Extended Plan", "An extended warranty for {subject} costs ${v} per year.", (19, 29, 39, 49, 79),
                   "How much does an extended warranty for {subject} cost?", "${v} per year"),
              Fact("Claim Window", "Warranty claims for {subject} must be filed within {v} days of the fault.",
                   (7, 14, 30, 60), "Within how many days must a warranty claim for {subject} be filed?", "{v} days")),
             ("electric cars", "swimming pools", "pianos")),
    Category("products", "Products",
             ("the AeroBlend 500 blender", "the TrailMax hiking boots", "the LumaDesk lamp", "the QuietCool fan",
              "the SnapPro camera bag", "the FlexiFit yoga mat", "the ThermoSip bottle", "the NestRest pillow",
              "the SwiftCharge power bank", "the GrillMaster pan"),
             (Fact("Materials", "{Subject} is made of {v}.", ("stainless steel", "aluminium", "recycled plastic",
                                                                "oak", "bamboo", "natural rubber"),
                   "What is {subject} made of?", "{v}"),
              Fact("Weight", "{Subject} weighs {v} kg.", ("0.4", "0.8", "1.2", "2.5", "3.1", "4.7"),
                   "How much does {subject} weigh?", "{v} kg"),
              Fact("Colours", "{Subject} is available in {v} colours.", (1, 2, 3, 4, 5, 6, 8),
                   "In how many colours is {subject} available?", "{v} colours")),
             ("the HoverBoard X drone", "the ChefBot robot", "the AquaPod aquarium")),
    Category("store_policies", "Store Policies",
             ("Springfield", "Riverside", "Lakeview", "Hillcrest", "Oakwood", "Maplewood", "Brookside", "Fairview",
              "Greenville", "Westfield"),
             (Fact("Opening Hours", "The {subject} store opens at {v} on weekdays.", ("7 am", "8 am", "9 am", "10 am"),
                   "What time does the {subject} store open on weekdays?", "{v}"),
              Fact("Parking", "The {subject} store offers {v} hours of free parking.", (1, 2, 3, 4),
                   "How many hours of free parking does the {subject} store offer?", "{v} hours"),
              Fact("Order Pickup", "Online orders are ready for pickup at the {subject} store within {v} hours.",
                   (1, 2, 4, 24), "How soon are online orders ready for pickup at the {subject} store?", "within {v} hours")),
             ("Atlantis", "Gotham", "Rivendell")),
    Category("loyalty", "Loyalty Program",
             ("Bronze", "Silver", "Gold", "Platinum", "Diamond", "Starter", "Plus", "Elite", "Family", "Student"),
             (Fact("Points Rate", "{Subject} members earn {v} points per dollar.", (1, 2, 3, 4, 5),
                   "How many points per dollar do {subject} members earn?", "{v} points per dollar"),
              Fact("Points Expiry", "{Subject} points expire after {v} months.", (6, 12, 18, 24),
                   "When do {subject} points expire?", "after {v} months"),
              Fact("Birthday Reward", "{Subject} members get a ${v} birthday reward.", (5, 10, 15, 20, 25),
                   "What birthday reward do {subject} members get?", "${v}")),
             ("Titanium", "Obsidian", "Cosmic")),
    Category("gift_cards", "Gift Cards",
             ("digital gift cards", "plastic gift cards", "holiday gift cards", "corporate gift cards",
              "birthday gift cards", "wedding gift cards", "graduation gift cards", "e-gift bundles",
              "reloadable cards", "promotional cards"),
             (Fact("Validity", "{Subject} are valid for {v} years.", (1, 2, 3, 5),
                   "How long are {subject} valid?", "{v} years"),
              Fact("Maximum Value", "{Subject} can hold up to ${v}.", (200, 500, 1000, 2000),
                   "What is the maximum value of {subject}?", "${v}"),
              Fact("Replacement Fee", "Replacing lost {subject} costs ${v}.", (0, 3, 5, 10),
                   "How much does it cost to replace lost {subject}?", "${v}")),
             ("lottery tickets", "airline vouchers", "casino chips")),
    Category("privacy", "Privacy",
             ("email addresses", "purchase history", "payment details", "location data", "browsing data",
              "phone numbers", "product reviews", "support chats", "wishlists", "loyalty data"),
             (Fact("Retention", "We retain {subject} for {v} months after account closure.", (1, 3, 6, 12, 24),
                   "How long are {subject} retained after account closure?", "{v} months"),
              Fact("Deletion Requests", "Deletion requests for {subject} are completed within {v} days.", (7, 14, 30, 45),
                   "How fast are deletion requests for {subject} completed?", "within {v} days"),
              Fact("Third Parties", "{Subject} are shared with {v} third-party processors.", (0, 1, 2, 3),
                   "With how many third-party processors are {subject} shared?", "{v}")),
             ("DNA samples", "fingerprints", "medical records")),
)

_FILLER = (
    "Customers can contact support by chat or phone for help with this topic.",
    "This policy was last reviewed by the customer care team this quarter.",
    "Exceptions may apply during seasonal promotions announced on the website.",
    "Staff in every store follow the same guidance as the online help centre.",
    "Keep your order number ready when you contact us about this topic.",
    "Where local law grants more rights, local law applies.",
)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _slug(s: str) -> str:
    return "-".join("".join(ch if ch.isalnum() else " " for ch in s.lower()).split())


def build(seed: int = 42) -> tuple[dict[str, str], dict[str, Any], list[dict[str, Any]]]:
    """(pages by filename, structure, queries) for a seed; pure and deterministic."""
    rng = random.Random(seed)
    pages: dict[str, str] = {}
    meta: list[dict[str, Any]] = []
    facts: list[tuple[str, str, Category, Fact, str, Any]] = []  # (filename, subject, cat, fact, section, value)
    for cat in CATEGORIES:
        for subject in cat.subjects:
            filename = f"{cat.key.replace('_', '-')}-{_slug(subject)}.md"
            title = f"{cat.title}: {_cap(subject)}"
            lines = [f"# {title}", "", f"This page explains our {cat.title.lower()} rules for {subject}. "
                     f"{rng.choice(_FILLER)}", ""]
            for fact in cat.facts:
                v = rng.choice(fact.values)
                sentence = fact.sentence.format(subject=subject, Subject=_cap(subject), v=v)
                f1, f2 = rng.sample(_FILLER, 2)
                lines += [f"## {fact.section}", "", f"{sentence} {f1} {f2}", ""]
                facts.append((filename, subject, cat, fact, fact.section, v))
            lines += ["## Eligibility", "", f"These rules apply to all orders involving {subject} placed online or in "
                      f"store. {rng.choice(_FILLER)}", "",
                      "## Exceptions", "", f"{rng.choice(_FILLER)} Marketplace sellers may set their own terms for "
                      f"{subject}.", ""]
            links = sorted(rng.sample([f"{cat.key.replace('_', '-')}-{_slug(s)}.md" for s in cat.subjects
                                       if s != subject], 2))
            lines += ["## Related Pages", "", f"Other {cat.title.lower()} pages related to {subject}:", "",
                      *[f"- [{link[:-3]}]({link})" for link in links], ""]
            pages[filename] = "\n".join(lines)
            meta.append({"id": filename[:-3].replace("-", "_"), "title": title, "filename": filename,
                         "category": "general_retail", "primary_topic": cat.key,
                         "secondary_topics": [_slug(f.section).replace("-", "_") for f in cat.facts],
                         "links_to": links})
    structure = {"num_pages": len(pages), "pages": meta}

    queries: list[dict[str, Any]] = []
    direct = rng.sample(facts, 75)
    for i, (fn, subject, cat, fact, section, v) in enumerate(direct, 1):
        queries.append({"query_id": f"q_direct_{i:03d}", "query_type": "direct",
                        "query": fact.question.format(subject=subject, Subject=_cap(subject)),
                        "ground_truth": fact.answer.format(v=v), "context_reference": [fn],
                        "metadata": {"difficulty": "easy", "category": cat.key, "section": section}})
    for i in range(1, 41):
        a, b = rng.sample(facts, 2)
        while a[0] == b[0]:
            a, b = rng.sample(facts, 2)
        qa = a[3].question.format(subject=a[1], Subject=_cap(a[1])).rstrip("?")
        qb = b[3].question.format(subject=b[1], Subject=_cap(b[1]))
        queries.append({"query_id": f"q_multi_hop_{i:03d}", "query_type": "multi_hop",
                        "query": f"{qa}, and {qb[:1].lower() + qb[1:]}",
                        "ground_truth": f"{a[3].answer.format(v=a[5])}; {b[3].answer.format(v=b[5])}",
                        "context_reference": [a[0], b[0]],
                        "metadata": {"difficulty": "medium", "category": f"{a[2].key}+{b[2].key}"}})
    negatives = [(cat, fact, subject) for cat in CATEGORIES for fact in cat.facts for subject in cat.absent]
    for i, (cat, fact, subject) in enumerate(rng.sample(negatives, 35), 1):
        queries.append({"query_id": f"q_negative_{i:03d}", "query_type": "negative",
                        "query": fact.question.format(subject=subject, Subject=_cap(subject)),
                        "ground_truth": "I don't know", "context_reference": [],
                        "metadata": {"difficulty": "hard", "category": cat.key}})
    return pages, structure, queries


def generate(out_dir: str | Path, seed: int = 42) -> Path:
    """Write the pages, `structure.json` and `queries.jsonl` into `out_dir` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pages, structure, queries = build(seed)
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    (out / "structure.json").write_text(json.dumps(structure, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / "queries.jsonl").write_text("".join(json.dumps(q, sort_keys=True) + "\n" for q in queries),
                                       encoding="utf-8")
    (out / "README.md").write_text(f"Synthetic retail support KB generated by harness.data.retail_kb (seed {seed}).\n",
                                   encoding="utf-8")
    return out


def resolve_kb(name: str | Path, data_dir: Path, cache_dir: Path) -> Path:
    """The knowledge base a setting names: a folder with `structure.json` (absolute, or under `data_dir`); the name
    `retail_kb` with no such folder is this module's synthetic KB, written once under `cache_dir`."""
    p = Path(name)
    folder = p if p.is_absolute() else data_dir / p
    if (folder / "structure.json").is_file() or str(name) != "retail_kb":
        return folder
    out = cache_dir / "retail_kb-seed42"
    if not (out / "queries.jsonl").is_file():
        generate(out.with_name(out.name + ".tmp"))
        out.with_name(out.name + ".tmp").replace(out)
    return out


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(generate(sys.argv[1] if len(sys.argv) > 1 else "fixtures/retail_kb"))

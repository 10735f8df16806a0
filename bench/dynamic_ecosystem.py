#!/usr/bin/env python3
"""`--dynamic` on installed published packages: how many Function classes it checks, and what it reports.

The static ecosystem check (bench/ecosystem.py) only reads packages. This one runs them, so the
packages must be installed, with their dependencies, in the Python that runs this script, next
to autograd-lint and torch 2.13.0 (pinned, so that no dependency pulls in another build)::

    python3 -m venv /tmp/venv-dyn && . /tmp/venv-dyn/bin/activate
    pip install -e . torch==2.13.0 -c bench/dynamic-constraints.txt \
        entmax torchdiffeq pypose gpytorch pyro-ppl botorch speechbrain monai fairscale
    python bench/dynamic_ecosystem.py run --out /tmp/dyn-now
    python bench/dynamic_ecosystem.py compare /tmp/dyn-before /tmp/dyn-now

`run` lints each package's installed directory with the real CLI, as a user would::

    python -m autograd_lint --dynamic --no-cache --extend-select AGL908 --format json \
        --dynamic-report OUT/PKG-report.json SITE/PKG

(AGL908, the by-design gradients, is off by default; it is selected to see the classification)
and prints, per package, the classes, how many were checked, why the others were not, and the
runtime findings (AGL9xx) by code and severity; then every runtime finding at error severity,
to be read in its code (bench/dynamic-findings.md holds the verdicts). `compare` prints the
classes whose status or runtime findings changed between two runs. `summary` also counts each
package's Function classes with its own `ast` scan and names any that the report leaves out.
CI never runs this.

`--batch blind7` selects the seventh blind batch (issue 29) instead: nine pure-PyTorch packages that
no earlier batch used, installed in their own environment (bench/dynamic-blind7-constraints.txt is
what pip resolved, torch pinned)::

    python3 -m venv /tmp/venv-blind7
    /tmp/venv-blind7/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind7-constraints.txt \
        torch-interpol hypll torch-pme spikingtorch kymatio pyepo mirtorch warprnnt-numba numba lxt
    /tmp/venv-blind7/bin/python bench/dynamic_ecosystem.py run --batch blind7 --out /tmp/blind7-now
    /tmp/venv-blind7/bin/python bench/dynamic_ecosystem.py compare --batch blind7 /tmp/blind7-before /tmp/blind7-now

`--batch blind8` selects the eighth blind batch (issue 29's measure): fourteen more pure-PyTorch packages,
in an environment of their own (bench/dynamic-blind8-constraints.txt, torch pinned). qsparse's setup.py
imports torch, so it goes in a second step, without build isolation::

    python3 -m venv /tmp/venv-blind8
    /tmp/venv-blind8/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind8-constraints.txt \
        matterhorn-pytorch torchray torchesnufft torchgw torch-semiring-einsum magic-clamp torchdiffeqpack \
        btorch mambapy sigpy torchspd pytopk torch-betainc
    /tmp/venv-blind8/bin/pip install --no-build-isolation -c bench/dynamic-blind8-constraints.txt torch==2.13.0 qsparse
    /tmp/venv-blind8/bin/python bench/dynamic_ecosystem.py run --batch blind8 --out /tmp/blind8-now

`--batch blind9` selects the ninth blind batch (issue 29's measure, again): nineteen more pure-PyTorch packages, in
an environment of their own (bench/dynamic-blind9-constraints.txt, torch pinned). omnibias-binary needs its `torch`
extra (two of its modules import `omnibias.torch`); dhl-mm's Function class is in its second top-level package,
`equivariant`::

    python3 -m venv /tmp/venv-blind9
    /tmp/venv-blind9/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind9-constraints.txt \
        tad-mctc ptranking autolrp 'omnibias-binary[torch]' diffcb astrohebbian torchdeform iunets torchjd gsmc-torch \
        egnlib torchdae torchsolve torchcurves torch-dxdt torchot torchspin invtorch dhl-mm
    PYTHONPATH=. /tmp/venv-blind9/bin/python bench/dynamic_ecosystem.py run --batch blind9 --out /tmp/blind9-now

`--batch blind10` selects the tenth blind batch (issue 29's measure, again): eighteen more pure-PyTorch packages, in
an environment of their own (bench/dynamic-blind10-constraints.txt, torch pinned). diffapqp installs as the package
`lao` (its Function classes are in `lao/diffapqp`), umnn as `UMNN`::

    python3 -m venv /tmp/venv-blind10
    /tmp/venv-blind10/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind10-constraints.txt \
        spaic qste pytorchcv quanto dtw-loss-functions exact-event-adjoint tracetorch umnn torch-conv-gradfix \
        solwa diffapqp dagua freegrad linformer routing-transformer photokan srkan pytorch-optimizer
    PYTHONPATH=. /tmp/venv-blind10/bin/python bench/dynamic_ecosystem.py run --batch blind10 --out /tmp/blind10-now

`--batch blind11` selects the eleventh blind batch (issue 29's measure, again): twenty-eight more pure-PyTorch
packages, in an environment of their own (bench/dynamic-blind11-constraints.txt, torch pinned). deel-torchlip installs
as the package `deel`, torch-diffsim as `diffsim`, torch-sim-atomistic as `torch_sim`, quatnet as `QuatNet`::

    python3 -m venv /tmp/venv-blind11
    /tmp/venv-blind11/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind11-constraints.txt \
        DominantSparseEigenAD bioiot deel-torchlip koopman mrphy multi-quantization pygmtools pyqtorch qmctorch \
        tesseract-torch torch-diffsim torch-quant torchdde torchgdm activations-plus dalib lie-transformer-pytorch \
        micronet se3-transformer-pytorch flowcon pytorch-kinematics torch-sim-atomistic bitnet-v3 quatnet jevloss \
        torch-dimensions torch-vn-algebra torchsim
    PYTHONPATH=. /tmp/venv-blind11/bin/python bench/dynamic_ecosystem.py run --batch blind11 --out /tmp/blind11-now

`--batch blind12` selects the twelfth blind batch (issue 29's measure, again): twenty-four more pure-PyTorch packages,
in an environment of their own (bench/dynamic-blind12-constraints.txt, torch pinned). nvmath-python goes in a second
step (cochain's linear algebra does not import without it, though it does not declare it), and torchvision, which
snnlab and sinkhorn-rebasin pull in, is removed (not built for this torch, it breaks `transformers`, which
organic-clone-machines imports). organic-clone-machines installs as `ocm`, sinkhorn-rebasin as `rebasin`,
cheetah-accelerator as `cheetah`, pararnn-torch as `pararnn`::

    python3 -m venv /tmp/venv-blind12
    /tmp/venv-blind12/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind12-constraints.txt \
        bioelectrics cheetah-accelerator deepquantum entropack ffolayer flash-semicrf mbirtorch ot-markov-distances \
        peftml ppq sll-core spd-learn cochain fastqml pararnn-torch qconduit qmlkit syndrilla torchrdit \
        neuromorphic-rt organic-clone-machines snnlab phasetorch sinkhorn-rebasin
    /tmp/venv-blind12/bin/pip install torch==2.13.0 -c bench/dynamic-blind12-constraints.txt nvmath-python
    /tmp/venv-blind12/bin/pip uninstall -y torchvision
    PYTHONPATH=. /tmp/venv-blind12/bin/python bench/dynamic_ecosystem.py run --batch blind12 --out /tmp/blind12-now

`--batch blind13` selects the thirteenth blind batch (issue 29's measure, again): twenty-five more pure-PyTorch
packages, in an environment of their own (bench/dynamic-blind13-constraints.txt, torch pinned). py-cpuinfo and
setuptools < 81 are needs the packages do not declare (neural_compressor.torch and torchtnt.utils.flops do not import
without them), and torchvision and torchaudio, which tonic pulls in for qualia-plugin-snn, are removed (not built for
this torch). open-analog-nn installs as `spice`, quanta-sdk as `quanta`, xnns as `xnn`::

    python3 -m venv /tmp/venv-blind13
    /tmp/venv-blind13/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind13-constraints.txt \
        xnns torchmorph deformation-inversion-layer torchflows zflows kirchcig nefi spire-rd quanta-sdk torchtnt dfsc \
        open-analog-nn resampler sdasim nengo-torch odak pylops torch-linode torch-type-nn torchtoolbox kinetic-ai \
        neural-compressor qualia-plugin-snn qualia-core pytorch-tabular py-cpuinfo 'setuptools<81'
    /tmp/venv-blind13/bin/pip uninstall -y torchvision torchaudio
    PYTHONPATH=. /tmp/venv-blind13/bin/python bench/dynamic_ecosystem.py run --batch blind13 --out /tmp/blind13-now

`--batch blind14` selects the fourteenth blind batch (issue 29's measure, again): twenty-one more pure-PyTorch
packages, in an environment of their own (bench/dynamic-blind14-constraints.txt, torch pinned). pytest is a need
torch-named-linops does not declare (torchlinops/__init__ imports it), and torchvision and torchaudio, which four of
the packages pull in, are removed (not built for this torch). arti-fit installs as `arti`, torch-linops as `linops`,
torch-named-linops as `torchlinops`, mirai-compiler as `mirai`, gaf-microbatch-pytorch as `GAF_microbatch_pytorch`,
rr-layer as `RR_layer`, basisconvolution as `BasisConvolution`::

    python3 -m venv /tmp/venv-blind14
    /tmp/venv-blind14/bin/pip install -e . torch==2.13.0 -c bench/dynamic-blind14-constraints.txt \
        adaswarm antsnormflows arti-fit basisconvolution cache-dit creyone-layer fast-vollib gaf-microbatch-pytorch \
        gd-vae-pytorch kpnn2 mirai-compiler photorch psf-generator rotational-update rr-layer torch-linops \
        torch-named-linops torch-rating torchmore torchsympy voxel pytest
    /tmp/venv-blind14/bin/pip uninstall -y torchvision torchaudio
    PYTHONPATH=. /tmp/venv-blind14/bin/python bench/dynamic_ecosystem.py run --batch blind14 --out /tmp/blind14-now

`--batch blind15` selects the fifteenth blind batch (issue 29's measure, again): twenty more pure-PyTorch packages, in
an environment of their own (bench/dynamic-blind15-constraints.txt, torch pinned, and setuptools < 81: it goes in
PIP_CONSTRAINT, which pip also reads for the sdists it builds, deepspeed's among them, pulled in by astrotime);
ipython, opencv-python-headless and plotly are needs that adfwi-torch, grad-cam and torch-activation do not declare
(their modules with Function classes import them); torchvision, which astrotime pulls in through timm, is removed (it
does not load its operators with this torch build; no module with a Function class needs it). adfwi-torch installs as
`ADFWI`, aequitas-fairlib as `fairlib`, fuzzy-tiling-activation as `fta`, grad-cam as `pytorch_grad_cam`, torch-snake
as `snake`::

    python3 -m venv /tmp/venv-blind15
    PIP_CONSTRAINT=bench/dynamic-blind15-constraints.txt /tmp/venv-blind15/bin/pip install -e . torch==2.13.0 \
        adfwi-torch aequitas-fairlib agent-torch alphagenome-pt astrotime complextensor complextorch cplxmodule \
        fuzzy-tiling-activation grad-cam loglu-pytorch nn-pruning pytorch-logit-logic stdplus-ext torch-activation \
        torch-kirigami torch-remat torch-snake torch-tract torchlens ipython opencv-python-headless plotly
    /tmp/venv-blind15/bin/pip uninstall -y torchvision
    PYTHONPATH=. /tmp/venv-blind15/bin/python bench/dynamic_ecosystem.py run --batch blind15 --out /tmp/blind15-now
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Import name of each package of bench/ecosystem-packages.txt that --dynamic is measured on.
PACKAGES = ("entmax", "torchdiffeq", "pypose", "gpytorch", "pyro", "botorch", "speechbrain", "monai", "fairscale")
# Import names of the seventh blind batch (issue 29, bench/dynamic-findings.md): packages that no
# earlier batch, static or dynamic, used; run first at 27415ba, before any change made for them.
BLIND7 = ("interpol", "hypll", "torchpme", "spikingtorch", "kymatio", "pyepo", "mirtorch", "warprnnt_numba", "lxt")
# Import names of the eighth blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch
# packages that no earlier batch used; run first at ff9e634, before any change made for them.
BLIND8 = ("matterhorn_pytorch", "torchray", "torchesnufft", "torchgw", "torch_semiring_einsum", "magic_clamp",
          "TorchDiffEqPack", "btorch", "mambapy", "sigpy", "torchspd", "pytopk", "torch_betainc", "qsparse")
# Import names of the ninth blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch packages
# that no earlier batch used, their directories under site-packages (`dcb` is diffcb's, `egn` egnlib's, `omnibias`
# omnibias-binary's, `equivariant` dhl-mm's); run once, blind, at the commit the findings name.
BLIND9 = ("tad_mctc", "ptranking", "autolrp", "omnibias", "dcb", "astrohebbian", "torchdeform", "iunets", "torchjd",
          "gsmc_torch", "egn", "torchdae", "torchsolve", "torchcurves", "torch_dxdt", "torchot", "torchspin", "invtorch",
          "equivariant")
# Import names of the tenth blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch packages that
# no earlier batch used, their directories under site-packages (`lao` is diffapqp's, `UMNN` umnn's); run once, blind,
# at the commit the findings name.
BLIND10 = ("spaic", "qste", "pytorchcv", "quanto", "dtw_loss_functions", "exact_event_adjoint", "tracetorch", "UMNN",
           "torch_conv_gradfix", "solwa", "lao", "dagua", "freegrad", "linformer", "routing_transformer",
           "photokan", "srkan", "pytorch_optimizer")
# Import names of the eleventh blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch packages
# that no earlier batch used, their directories under site-packages (`deel` is deel-torchlip's, `diffsim`
# torch-diffsim's, `torch_sim` torch-sim-atomistic's, `QuatNet` quatnet's); run once, blind, at the commit the
# findings name.
BLIND11 = ("torchgdm", "torch_dimensions", "torchsim", "micronet", "bitnet_v3", "DominantSparseEigenAD",
           "torch_vn_algebra", "mrphy", "pygmtools", "pyqtorch", "diffsim", "torch_quant", "torchdde",
           "activations_plus", "bioiot", "deel", "koopman", "multi_quantization", "qmctorch", "tesseract_torch",
           "dalib", "lie_transformer_pytorch", "se3_transformer_pytorch", "flowcon", "pytorch_kinematics", "torch_sim",
           "QuatNet", "jevloss")
# Import names of the twelfth blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch packages that
# no earlier batch used, their directories under site-packages (`cheetah` is cheetah-accelerator's, `pararnn`
# pararnn-torch's, `ocm` organic-clone-machines', `rebasin` sinkhorn-rebasin's); run once, blind, at the commit the
# findings name.
BLIND12 = ("flash_semicrf", "spd_learn", "cochain", "cheetah", "ppq", "deepquantum", "ffolayer", "peftml",
           "mbirtorch", "ot_markov_distances", "sll_core", "pararnn", "qconduit", "snnlab", "bioelectrics",
           "entropack", "fastqml", "qmlkit", "syndrilla", "torchrdit", "neuromorphic_rt", "ocm", "phasetorch",
           "rebasin")
# Import names of the thirteenth blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch packages
# that no earlier batch used, their directories under site-packages (`xnn` is xnns', `spice` open-analog-nn's,
# `quanta` quanta-sdk's); run once, blind, at the commit the findings name.
BLIND13 = ("xnn", "torchmorph", "deformation_inversion_layer", "torchflows", "zflows", "kirchcig", "nefi", "spire_rd",
           "quanta", "torchtnt", "dfsc", "spice", "resampler", "sdasim", "nengo_torch", "odak", "pylops", "torch_linode",
           "torch_type_nn", "torchtoolbox", "kinetic_ai", "neural_compressor", "qualia_plugin_snn", "qualia_core",
           "pytorch_tabular")
# Import names of the fourteenth blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch packages
# that no earlier batch used, their directories under site-packages (`arti` is arti-fit's, `linops` torch-linops',
# `torchlinops` torch-named-linops', `mirai` mirai-compiler's, `RR_layer` rr-layer's, `BasisConvolution`
# basisconvolution's); run once, blind, at the commit the findings name.
BLIND14 = ("adaswarm", "antsnormflows", "arti", "BasisConvolution", "cache_dit", "creyone_layer", "fast_vollib",
           "GAF_microbatch_pytorch", "gd_vae_pytorch", "kpnn2", "mirai", "photorch", "psf_generator",
           "rotational_update", "RR_layer", "linops", "torchlinops", "torch_rating", "torchmore", "torchsympy", "voxel")
# Import names of the fifteenth blind batch (issue 29's measure, bench/dynamic-findings.md): pure-PyTorch packages
# that no earlier batch used, their directories under site-packages (`ADFWI` is adfwi-torch's, `fairlib`
# aequitas-fairlib's, `fta` fuzzy-tiling-activation's, `pytorch_grad_cam` grad-cam's, `snake` torch-snake's); run
# once, blind, at the commit the findings name.
BLIND15 = ("ADFWI", "fairlib", "agent_torch", "alphagenome_pt", "astrotime", "complextensor", "complextorch",
           "cplxmodule", "fta", "pytorch_grad_cam", "loglu_pytorch", "nn_pruning", "pytorch_logit_logic", "stdplus_ext",
           "torch_activation", "torch_kirigami", "torch_remat", "snake", "torch_tract", "torchlens")
BATCHES = {"ecosystem": PACKAGES, "blind7": BLIND7, "blind8": BLIND8, "blind9": BLIND9, "blind10": BLIND10,
           "blind11": BLIND11, "blind12": BLIND12, "blind13": BLIND13, "blind14": BLIND14,
           "blind15": BLIND15}


def run(args: argparse.Namespace) -> int:
    site = Path(args.site_packages or sysconfig.get_paths()["purelib"])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    packages = args.packages or BATCHES[args.batch]
    for package in packages:
        if not (site / package).is_dir():
            print(f"{package}: not installed in {site}", file=sys.stderr)
            continue
        started = time.perf_counter()
        with open(out / f"{package}.json", "w", encoding="utf-8") as stdout, \
                open(out / f"{package}.err", "w", encoding="utf-8") as stderr:
            completed = subprocess.run(
                [sys.executable, "-m", "autograd_lint", "--dynamic", "--no-cache", "--extend-select", "AGL908",
                 "--format", "json", "--dynamic-report", str(out / f"{package}-report.json"), str(site / package)],
                stdout=stdout, stderr=stderr, cwd=REPO, check=False)
        print(f"{package}: exit {completed.returncode}, {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return summary(out, packages, site)


def scanned_function_classes(package_dir: Path) -> set[tuple[str, str, int]]:
    """(file, class, line) of each class under package_dir whose base is a `Function` or, transitively,
    another such class of the package: an independent count, to check that the report lists each one.

    Read with `ast` alone, by base names, so that it does not share a mistake with the linter's model."""
    classes = []
    for path in sorted(package_dir.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
                classes.append((str(path.resolve()), node.name, node.lineno, bases))
    function_names, found = {"Function", "InplaceFunction"}, set()
    while True:
        new = {(file, name, line) for file, name, line, bases in classes if bases & function_names} - found
        if not new:
            return found
        found |= new
        function_names |= {name for _, name, _ in new}


def _load(out: Path, package: str) -> tuple[dict, list[dict]]:
    report = json.loads((out / f"{package}-report.json").read_text(encoding="utf-8"))
    findings = json.loads((out / f"{package}.json").read_text(encoding="utf-8"))["findings"]
    return report, [finding for finding in findings if finding["code"].startswith("AGL9")]


def summary(out: Path, packages, site: Path | None = None) -> int:
    site = site or Path(sysconfig.get_paths()["purelib"])
    totals = collections.Counter()
    errors, unlisted = [], []
    print("| package | classes | in report | checked | gradcheck ran | not checked | runtime findings |\n"
          "|---|---:|---:|---:|---:|---|---|")
    for package in packages:
        if not (out / f"{package}-report.json").is_file():
            continue
        report, runtime = _load(out, package)
        counts = report["summary"]
        why = ", ".join(f"{number} {status}" for status, number in counts["not_checked"].items() if number)
        by_code = collections.Counter(f"{f['code']} {f['severity']}" for f in runtime)
        # "checked" also counts the by-design check that replaces gradcheck; issue 29 asks for both.
        gradcheck_ran = sum("gradcheck" in entry["ran"] for entry in report["functions"])
        scanned = scanned_function_classes(site / package) if (site / package).is_dir() else set()
        # A class defined inside a function is reported by its qualified name (`outer.<locals>.Name`);
        # the scan knows only `Name`.
        listed = {(str(Path(entry["path"]).resolve()), entry["function_class"].rsplit(".", 1)[-1], entry["line"])
                  for entry in report["functions"]}
        unlisted += sorted(scanned - listed)
        print(f"| {package} | {len(scanned) or '?'} | {len(scanned & listed) if scanned else counts['function_classes']} | "
              f"{counts['checked']} | {gradcheck_ran} | {why} | "
              f"{', '.join(f'{n} {code}' for code, n in sorted(by_code.items()))} |")
        totals["classes"] += counts["function_classes"]
        totals["checked"] += counts["checked"]
        totals["gradcheck ran"] += gradcheck_ran
        errors += [f for f in runtime if f["severity"] == "error"]
    for file, name, line in unlisted:
        print(f"- NOT IN THE REPORT: {file.split('site-packages/')[-1]}:{line} {name}")
    if totals["classes"]:
        print(f"\n{totals['checked']} of {totals['classes']} classes checked "
              f"({100 * totals['checked'] / totals['classes']:.0f}%), gradcheck ran on {totals['gradcheck ran']} "
              f"({100 * totals['gradcheck ran'] / totals['classes']:.0f}%); {len(errors)} runtime findings at error severity:")
    for finding in errors:
        where = finding["path"].split("site-packages/")[-1]
        print(f"- {where}:{finding['line']} {finding['code']} {finding['message'][:200]}")
    return 0


def compare(args: argparse.Namespace) -> int:
    before, after = Path(args.before), Path(args.after)
    for package in BATCHES[args.batch]:
        if not ((before / f"{package}-report.json").is_file() and (after / f"{package}-report.json").is_file()):
            continue
        old = {(f["path"], f["function_class"]): f for f in _load(before, package)[0]["functions"]}
        new = {(f["path"], f["function_class"]): f for f in _load(after, package)[0]["functions"]}
        for key in sorted(set(old) | set(new), key=lambda key: (key[0], key[1] or "")):
            was, now = old.get(key), new.get(key)
            shown = lambda entry: "absent" if entry is None else \
                f"{entry['status']} {entry['runtime_findings'] or ''}".strip()  # noqa: E731
            if shown(was) != shown(now):
                print(f"{package} {key[1]}: {shown(was)} -> {shown(now)}"
                      + (f" ({now['reason'][:160]})" if now and now["reason"] else ""))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="run --dynamic over the installed packages")
    run_parser.add_argument("--out", required=True, help="directory for the JSON outputs")
    run_parser.add_argument("--site-packages", help="where the packages are installed (default: this Python's)")
    run_parser.add_argument("packages", nargs="*", help="import names (default: the batch's)")
    summary_parser = commands.add_parser("summary", help="the table and the error findings of a run")
    summary_parser.add_argument("out")
    summary_parser.add_argument("--site-packages", help="where the packages are installed (default: this Python's)")
    compare_parser = commands.add_parser("compare", help="classes whose status or findings changed")
    compare_parser.add_argument("before")
    compare_parser.add_argument("after")
    for subparser in (run_parser, summary_parser, compare_parser):
        subparser.add_argument("--batch", choices=sorted(BATCHES), default="ecosystem",
                               help="which packages: the ecosystem check's or a blind batch's (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args)
    if args.command == "summary":
        return summary(Path(args.out), BATCHES[args.batch], args.site_packages and Path(args.site_packages))
    return compare(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

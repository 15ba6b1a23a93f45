"""Which module-level statements read what lies outside the source, told
from their text alone: a global such a statement makes counts by its
contents as well (tests/test_stale41_outside.py runs the cases end to end).
Packaged data, a cursor iterated, a tool's output and the library readers
below were not seen: a resume replayed the output of the old value."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from durable._fingerprint.namedfiles import named_files
from durable._fingerprint.outside import reads_outside

READS = [
    'W = json.loads(pkgutil.get_data("pkg", "w.json"))',
    'W = dict(conn.execute("select k, v from r"))',
    'W = [r for r in cur.execute("select 1")]',
    'W = subprocess.check_output(["git", "ls-files"]).split()',
    'W = subprocess.run(["git", "ls-files"], capture_output=True, text=True).stdout.split()',
    'W = subprocess.getoutput("ls").split()',
    'W = os.popen("ls").readlines()',
    'W = tokenizer.from_pretrained("./model")',
    'W = xr.open_dataset("a.nc")',
    'W = h5py.File("a.h5")["x"][:]',
    'W = np.memmap("a.bin", dtype="f4")',
    'W = ET.parse("a.xml").getroot()',
    'W = zipfile.ZipFile("a.zip").namelist()',
    'W = load_dataset("csv", data_files="a.csv")',
    'W = cv2.imread("a.png")',
    'W = scipy.io.loadmat("a.mat")',
    'app.config.from_pyfile("settings.cfg")',
    'W = Dynaconf(settings_files=["settings.toml"])',
    'W = env.get_template("prompt.j2")',
]

SOURCE_ONLY = [
    "W = [1, 2, 3]",
    'W = {"started": time.time()}',
    'W = logging.getLogger("x")',
    "W = make_client()",  # not a function of the module: nothing tells
    'W = sys.stdout.write("x")',  # what goes out is no input
]


@pytest.mark.parametrize("text", READS)
def test_a_statement_reading_outside_is_told(text: str) -> None:
    assert reads_outside(ast.parse(text).body, {}, None, "W")


@pytest.mark.parametrize("text", SOURCE_ONLY)
def test_a_statement_of_the_source_alone_is_not(text: str) -> None:
    assert not reads_outside(ast.parse(text).body, {}, None, "W")


@pytest.mark.parametrize(
    ("text", "counted"),
    [
        ('W = jinja2.Template(Path("p.j2").read_text())', True),
        ('W = jinja2.Template(open("p.j2").read())', True),
        ('W = Template((HERE / "sub" / "q.j2").read_text())', True),
        ('W = Template(os.path.join(HERE, "sub", "q.j2"))', True),
        ('W = zipfile.ZipFile("p.j2", "w")', False),  # the run writes it
        ('W = shelve.open("p.j2")', False),  # a store the run writes
        ('W = sqlite3.connect("p.j2")', False),
        ('W = Template("not a file")', False),
    ],
)
def test_the_small_files_a_statement_names_count_by_their_bytes(
    text: str, counted: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template keeps no trace of its text: the files its statement names
    count for it (an edited prompt file replayed the old prompt's output)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.j2").write_text("Double: {{ x * 2 }}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "q.j2").write_text("Triple: {{ x * 3 }}")
    assert bool(named_files(tuple(ast.parse(text).body), None)) is counted

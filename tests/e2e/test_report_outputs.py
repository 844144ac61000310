"""--report's files go through the one list of a job's outputs (src/pipeline/job_outputs) and
the batch's gallery (src/pipeline/report_gallery): --skip-existing redoes a job whose page is
missing, a symlink at a page's or at the gallery's name is refused (and its target not
created), an input at the gallery's name is not replaced, and a shard writes no gallery.
"""
import json
import re
import unittest

from harness import REPO, TmpCase, photo_like, run

SEEDED = ["--img-size", "32", "--patch-size", "8", "--dim", "16", "--d-k", "8", "--seed", "4", "--report"]


class ReportOutputs(TmpCase):
    tmp_prefix = "vitattn-report-outputs-"

    def setUp(self):
        super().setUp()
        for i in range(3):
            self.write(f"in/a{i}.png", photo_like(40, 48, seed=i))
        self.out = self.dir / "out"

    def draw(self, *args):
        return run(*SEEDED, *args, self.dir / "in", "-o", self.out)

    def test_batch_writes_pages_and_gallery(self):
        rc, _, err = self.draw()
        self.assertEqual(rc, 0, err)
        names = sorted(p.name for p in self.out.iterdir())
        self.assertEqual(names, sorted([f"a{i}{s}" for i in range(3) for s in ("_attn.png", "_report.html", "_settings.txt")]
                                       + ["index.html"]))
        index = (self.out / "index.html").read_text()
        for i in range(3):
            self.assertIn(f'href="a{i}_report.html"', index)
        self.no_temporaries(self.out)

    def test_skip_existing_redoes_a_missing_page(self):
        self.assertEqual(self.draw()[0], 0)
        (self.out / "a1_report.html").unlink()
        rc, _, err = self.draw("--skip-existing")
        self.assertEqual(rc, 0, err)
        self.assertIn("1 written", err)
        self.assertIn("2 skipped", err)
        self.assertTrue((self.out / "a1_report.html").is_file())

    def test_symlinked_page_is_refused(self):
        self.out.mkdir()
        target = self.dir / "elsewhere.html"
        (self.out / "a2_report.html").symlink_to(target)
        rc, _, err = self.draw()
        self.assertEqual(rc, 1, err)
        self.assertIn("a2_report.html is a symbolic link", err)
        self.assertFalse(target.exists())
        self.assertTrue((self.out / "a0_report.html").is_file())  # the others are written

    def test_symlinked_gallery_is_refused(self):
        self.out.mkdir()
        target = self.dir / "elsewhere.html"
        (self.out / "index.html").symlink_to(target)
        rc, _, err = self.draw()
        self.assertEqual(rc, 1, err)
        self.assertIn("index.html: is a symbolic link; the gallery is not written", err)
        self.assertFalse(target.exists())
        self.assertTrue((self.out / "index.html").is_symlink())
        for i in range(3):
            self.assertTrue((self.out / f"a{i}_report.html").is_file())

    def test_input_at_gallery_name_is_not_replaced(self):
        self.out.mkdir()
        page = self.out / "index.html"
        page.write_text("<!DOCTYPE html><p>mine</p>")
        rc, _, err = run(*SEEDED, self.dir / "in" / "a0.png", page, "-o", self.out)
        self.assertEqual(rc, 2, err)
        self.assertIn("the gallery page " + str(page) + ": is an input of this run; not replaced", err)
        self.assertEqual(page.read_text(), "<!DOCTYPE html><p>mine</p>")

    def test_pages_replace_only_pages_vitattn_wrote(self):
        # A page of someone else's where a report page or the gallery goes stops the run before
        # any work, naming the file and what it is; vitattn's own pages are replaced run after run.
        self.assertEqual(self.draw()[0], 0)
        rc, _, err = self.draw()
        self.assertEqual(rc, 0, err)
        for name in ("a1_report.html", "index.html"):
            page = self.out / name
            own = page.read_text()
            for mine in ("<!DOCTYPE html><p>mine</p>", "<html>my notes</html>"):
                page.write_text(mine)
                rc, _, err = self.draw()
                self.assertEqual(rc, 2, err)
                lines = err.strip().splitlines()
                self.assertEqual(len(lines), 1, err)
                self.assertIn(str(page), lines[0])
                self.assertIn("an HTML page that vitattn did not write", lines[0])
                self.assertEqual(page.read_text(), mine)
            page.write_text(own)
        rc, _, err = self.draw()
        self.assertEqual(rc, 0, err)

    def test_a_budget_below_one_layer_still_keeps_the_drawn_layer(self):
        # --report-max-mb under one layer's matrices: the page still holds --layer's full
        # matrices (the README: "the full matrices of --layer only"), every other layer its
        # class-token rows, and it says that --layer alone is over the budget.
        cifar = REPO / "models" / "vit_cifar10_tintn.safetensors"  # 4 layers, 4 heads, 65 tokens
        rc, _, err = run("--model", cifar, "--report", "--report-max-mb", "0.001", "--layer", "2",
                         self.dir / "in" / "a0.png", "-o", self.out)
        self.assertEqual(rc, 0, err)
        html = (self.out / "a0_report.html").read_text()
        data = json.loads(re.search(r'<script type="application/json" id="vitattn-data">(.*?)</script>', html, re.S).group(1))
        self.assertEqual([layer["rows"] for layer in data["attention"]], [1, 1, 65, 1])
        said = " ".join(data["left_out"])
        self.assertIn("every layer but layer 2", said)
        self.assertIn("layer 2 alone", said)

    def test_shard_writes_no_gallery(self):
        rc, _, err = self.draw("--shard", "1/2")
        self.assertEqual(rc, 0, err)
        self.assertFalse((self.out / "index.html").exists())
        self.assertTrue(any(self.out.glob("*_report.html")))


if __name__ == "__main__":
    unittest.main()

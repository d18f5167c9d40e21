import pathlib
import pytest
from annotation import services
from annotation.models import Dataset, Instruction
from tests.browser.conftest import login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DEMO = pathlib.Path("annotation/demo_data")

def test_shots(page, live_server, browser_media, browser):
    admin = UserFactory(username="admin", role="admin")
    rater = UserFactory(username="rater", role="rater")
    files = [("demo.jsonl", (DEMO / "demo.jsonl").read_bytes())]
    services.dataset_import_files(dataset_name="demo", fmt="flask", files=files)
    outs = [(p.name, p.read_bytes()) for p in sorted((DEMO / "outputs").glob("*.jsonl"))]
    services.dataset_import_files(dataset_name="demo", fmt="flask_outputs", files=outs)
    services.import_job_create(dataset_name="demo2", fmt="flask", uploads=files, user=admin)
    page.goto(live_server.url + "/login/")
    page.screenshot(path="/tmp/shot-login.png", full_page=True)
    login(page, live_server, admin)
    page.screenshot(path="/tmp/shot-home.png", full_page=True)
    for name, path in [("datasets", "/datasets/"), ("rubric", "/rubrics/"), ("imports", "/imports/"), ("new", "/imports/new/")]:
        page.goto(live_server.url + path)
        page.screenshot(path=f"/tmp/shot-{name}.png", full_page=True)
    page.goto(live_server.url + "/rubrics/")
    page.get_by_role("link", name="FLASK").first.click()
    page.screenshot(path="/tmp/shot-rubric-detail.png", full_page=True)
    ds = Dataset.objects.get(name="demo")
    page.goto(f"{live_server.url}/datasets/{ds.pk}/")
    page.screenshot(path="/tmp/shot-demo.png", full_page=True)
    ins = Instruction.objects.get(dataset=ds, external_id="3")
    page.goto(f"{live_server.url}/instructions/{ins.pk}/")
    page.screenshot(path="/tmp/shot-instruction.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/datasets/{ds.pk}/")
    page.screenshot(path="/tmp/shot-mobile.png", full_page=False)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.get_by_role("button", name="Log out").click()
    login(page, live_server, rater)
    page.screenshot(path="/tmp/shot-rater-home.png")
    page.goto(f"{live_server.url}/datasets/")
    page.screenshot(path="/tmp/shot-403.png")

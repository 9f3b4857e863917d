"""The import task: runs an uploaded file's import in a worker, never in the web request.

acks_late with reject_on_worker_lost: a killed worker published nothing, and the task is
delivered again; a job that already finished is left alone.
"""

from celery import shared_task


@shared_task(
    name="annotation.imports.run_import",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_import_task(job_id: int) -> str:
    from annotation.imports.services import run_job

    return run_job(int(job_id)).status

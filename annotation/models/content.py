"""What is being evaluated: systems, prompts (with slice metadata) and each system's outputs.

None of this is ever sent to an annotator by id; annotators see presentations.
"""

from django.db import models


class System(models.Model):
    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="systems")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="system_name_unique"),
        ]

    def __str__(self) -> str:
        return self.name


class Prompt(models.Model):
    # No index of its own: prompt_id_unique (study, external_id) leads with the study, and every
    # index less is less work for an import of a million rows.
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="prompts", db_index=False
    )
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    language = models.CharField(max_length=32, blank=True)
    topic = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=200, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "external_id"], name="prompt_id_unique"),
        ]

    def __str__(self) -> str:
        return self.external_id


class Output(models.Model):
    # Indexed by output_unique (prompt, system), which leads with the prompt.
    prompt = models.ForeignKey(
        Prompt, on_delete=models.CASCADE, related_name="outputs", db_index=False
    )
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="outputs")
    text = models.TextField()
    # The id the output had where it came from; unique within a study (checked by the importer).
    external_id = models.CharField(max_length=200, blank=True, default="", db_default="")

    class Meta:
        ordering = ["prompt", "system"]
        constraints = [
            models.UniqueConstraint(fields=["prompt", "system"], name="output_unique"),
            models.UniqueConstraint(
                fields=["prompt", "external_id"],
                condition=~models.Q(external_id=""),
                name="output_external_id_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.system} on {self.prompt}"

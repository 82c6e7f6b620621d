"""Resources: the files a buddy carries in ``resources/``, listed and read by the model."""

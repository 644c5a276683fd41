"""The hostile suite: bombs, wide rows, deep JSON, smuggling and floods, one case at a time."""

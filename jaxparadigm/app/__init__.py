"""The application: CLI, tasks, text and Markdown rendering, plots."""

"""The reasons built-in checks give, in English (`en`) and Chinese (`zh`), keyed alike."""

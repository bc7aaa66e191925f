try:
    from repro.entry import main
except KeyboardInterrupt:  # Ctrl-C while Python imports repro: nothing has started
    raise SystemExit(130) from None

main()

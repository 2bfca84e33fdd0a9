"""The Hugging Face Hub: manifest, cards, upload folders, loading, pushing, dataset builds."""

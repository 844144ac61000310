// vitattn gallery: reorders the cards by name or by the entropy of each page's drawn map.
(() => {
  'use strict';
  const gallery = document.getElementById('gallery');
  const entropy = (li) => (li.dataset.entropy === '' ? Infinity : Number(li.dataset.entropy));
  function sortBy(compare) {
    const cards = Array.from(gallery.children).sort(compare);
    gallery.append(...cards);
  }
  const byName = (a, b) => a.dataset.name.localeCompare(b.dataset.name) || 0;
  document.getElementById('sort-name').addEventListener('click', () => sortBy(byName));
  document.getElementById('sort-entropy').addEventListener('click', () => sortBy((a, b) => entropy(a) - entropy(b) || byName(a, b)));
  document.getElementById('sort-entropy-desc').addEventListener('click', () => sortBy((a, b) => entropy(b) - entropy(a) || byName(a, b)));
  sortBy(byName);
})();
